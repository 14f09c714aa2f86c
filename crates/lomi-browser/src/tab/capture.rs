//! What a tab's page looks like: PNG captures (viewport, full page, element, clip), the page held
//! still for a deterministic capture, the person's live view (previews and the screencast), and
//! PDFs.

use std::time::Duration;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use chromiumoxide::cdp::browser_protocol::page::EventScreencastFrame;
use futures_util::StreamExt;
use lomi_protocol::tools::browser::ClipRect;
use serde_json::{Value, json};

use super::{Tab, cdp_error};
use crate::BrowserError;

/// How long the network must be quiet before a deterministic capture: shorter than a wait's
/// idle, since the capture follows a finished load and only needs nothing in flight.
const STEADY_QUIET: Duration = Duration::from_millis(100);

/// Run in the page by [`Tab::steady`] with its time limit in ms; true once fonts loaded.
const STEADY_SCRIPT: &str = r#"async (limit) => {
  if (!document.getElementById('__lomi_steady')) {
    const style = document.createElement('style');
    style.id = '__lomi_steady';
    style.textContent = '*,*::before,*::after{animation:none!important;transition:none!important;caret-color:transparent!important}';
    (document.head || document.documentElement).appendChild(style);
  }
  for (const a of document.getAnimations()) {
    try { a.effect.getComputedTiming().endTime === Infinity ? a.cancel() : a.finish(); } catch (e) { a.cancel(); }
  }
  const late = (ms) => new Promise((done) => setTimeout(() => done(false), ms));
  const fonts = document.fonts
    ? await Promise.race([document.fonts.ready.then(() => document.fonts.status === 'loaded'), late(limit)])
    : true;
  await Promise.race([new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))), late(200)]);
  return fonts;
}"#;

/// The longest side, in image pixels, of one capture: Chromium's compositor draws at most
/// 16,384 pixels a side, and a larger capture fails.
pub const MAX_CAPTURE_SIDE: f64 = 16_384.0;

/// What to capture.
#[derive(Clone, Debug)]
pub enum CaptureArea {
    Viewport,
    FullPage,
    Element {
        snapshot_id: String,
        element_ref: String,
    },
    Clip(ClipRect),
}

impl Tab {
    /// Captures a PNG of the tab: Chromium's own bytes, clipped and scaled by Chromium. `fast`
    /// has Chromium compress for speed (about twice the bytes, half the time: what an agent
    /// looking at the image wants); without it the PNG is as small as Chromium makes it (for a
    /// file kept in the project).
    /// Captures `area` at `scale` image pixels per CSS pixel, or less where the area is larger
    /// than Chromium captures at once ([`MAX_CAPTURE_SIDE`] pixels a side): returns the PNG and
    /// the scale it has.
    pub async fn capture(
        &self,
        area: &CaptureArea,
        scale: f64,
        fast: bool,
    ) -> Result<(Vec<u8>, f64), BrowserError> {
        let mut scale = scale;
        self.no_dialog()?;
        let mut params = json!({ "format": "png", "optimizeForSpeed": fast });
        let clip = match area {
            CaptureArea::Viewport if scale >= 1.0 => None,
            CaptureArea::Viewport => {
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let v = &metrics["cssVisualViewport"];
                Some(ClipRect {
                    x: v["pageX"].as_f64().unwrap_or(0.0),
                    y: v["pageY"].as_f64().unwrap_or(0.0),
                    width: v["clientWidth"].as_f64().unwrap_or(0.0),
                    height: v["clientHeight"].as_f64().unwrap_or(0.0),
                })
            }
            CaptureArea::FullPage => {
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let size = &metrics["cssContentSize"];
                Some(ClipRect {
                    x: 0.0,
                    y: 0.0,
                    width: size["width"].as_f64().unwrap_or(0.0).ceil(),
                    height: size["height"].as_f64().unwrap_or(0.0).ceil(),
                })
            }
            CaptureArea::Element {
                snapshot_id,
                element_ref,
            } => {
                let resolved = self.resolve(snapshot_id, element_ref)?;
                let answer = self
                    .helper(resolved.context, &format!("reveal({})", resolved.number))
                    .await?;
                Self::checked(answer, element_ref)?;
                let rect = self
                    .helper(
                        resolved.context,
                        &format!(
                            "element({}) && (r => ({{x: r.left, y: r.top, width: r.width, height: r.height}}))(globalThis.__lomi.element({}).getBoundingClientRect())",
                            resolved.number, resolved.number
                        ),
                    )
                    .await?;
                if !rect.is_object() {
                    return Err(BrowserError::Stale(format!(
                        "{element_ref} is no longer in the page"
                    )));
                }
                let (ox, oy) = self.frame_origin(&resolved).await?;
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let v = &metrics["cssVisualViewport"];
                Some(ClipRect {
                    x: rect["x"].as_f64().unwrap_or(0.0) + ox + v["pageX"].as_f64().unwrap_or(0.0),
                    y: rect["y"].as_f64().unwrap_or(0.0) + oy + v["pageY"].as_f64().unwrap_or(0.0),
                    width: rect["width"].as_f64().unwrap_or(0.0),
                    height: rect["height"].as_f64().unwrap_or(0.0),
                })
            }
            CaptureArea::Clip(clip) => Some(*clip),
        };
        if let Some(clip) = clip {
            if clip.width < 1.0 || clip.height < 1.0 {
                return Err(BrowserError::Invalid(
                    "the area to capture is empty".to_owned(),
                ));
            }
            // A taller (or wider) area is scaled down to fit, not refused.
            let side = clip.width.max(clip.height) * scale;
            if side > MAX_CAPTURE_SIDE {
                scale *= MAX_CAPTURE_SIDE / side;
            }
            params["clip"] = json!({
                "x": clip.x, "y": clip.y, "width": clip.width, "height": clip.height, "scale": scale,
            });
            params["captureBeyondViewport"] = json!(true);
        }
        let data = self.screenshot(params).await?;
        let png = BASE64_STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Cdp(format!("Chromium's image is not base64: {e}")))?;
        Ok((png, scale))
    }

    /// Holds the page still for a deterministic capture, waiting at most `limit`: CSS
    /// animations and transitions off and Web Animations finished (or cancelled when endless),
    /// caret and scrollbars hidden, the page focused, web fonts loaded, and the network quiet. Answers what did
    /// not settle within `limit` (empty: all did). [`Tab::release`] undoes it.
    pub async fn steady(&self, limit: Duration) -> Result<Vec<String>, BrowserError> {
        self.no_dialog()?;
        let deadline = tokio::time::Instant::now() + limit;
        self.hold_emulation(true).await?;
        let mut missing = Vec::new();
        if !self.network_quiet(deadline, STEADY_QUIET).await {
            missing.push(format!(
                "{} network requests were still in flight",
                self.lock().in_flight.len()
            ));
        }
        let left = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .as_millis()
            .max(1);
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!("({STEADY_SCRIPT})({left})"),
                    "awaitPromise": true, "returnByValue": true,
                }),
            )
            .await?;
        if answer["result"]["value"] != json!(true) {
            missing.push("web fonts were still loading".to_owned());
        }
        Ok(missing)
    }

    /// Lets the page move again after [`Tab::steady`].
    pub async fn release(&self) -> Result<(), BrowserError> {
        self.raw(
            "Runtime.evaluate",
            json!({ "expression": "document.getElementById('__lomi_steady')?.remove()" }),
        )
        .await?;
        self.hold_emulation(false).await
    }

    /// What [`Tab::steady`] has Chromium emulate (`on`) and [`Tab::release`] lifts: scrollbars
    /// hidden, and the page focused whether or not its window is in front (focus rings and
    /// `:focus` styles the same in any tab).
    async fn hold_emulation(&self, on: bool) -> Result<(), BrowserError> {
        self.raw("Emulation.setScrollbarsHidden", json!({ "hidden": on }))
            .await?;
        self.raw(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": on }),
        )
        .await?;
        Ok(())
    }

    /// The page rectangle (CSS pixels) of the first element `selector` matches, scrolled into
    /// view; `None` when nothing matches or it has no box.
    pub async fn selector_rect(&self, selector: &str) -> Result<Option<ClipRect>, BrowserError> {
        self.no_dialog()?;
        let selector = serde_json::to_string(selector).unwrap_or_default();
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!(
                        "(() => {{ let e; try {{ e = document.querySelector({selector}); }} catch (x) {{ return 'bad'; }} if (!e) return null; \
                         e.scrollIntoView({{block: 'nearest', inline: 'nearest'}}); const r = e.getBoundingClientRect(); \
                         return r.width && r.height ? [r.left + scrollX, r.top + scrollY, r.width, r.height] : null; }})()"
                    ),
                    "returnByValue": true,
                }),
            )
            .await?;
        let value = &answer["result"]["value"];
        if value == "bad" {
            return Err(BrowserError::Invalid(format!(
                "{selector} is not a CSS selector this page accepts"
            )));
        }
        Ok(value.as_array().and_then(|v| {
            let side = |i: usize| v.get(i).and_then(Value::as_f64);
            Some(ClipRect {
                x: side(0)?,
                y: side(1)?,
                width: side(2)?,
                height: side(3)?,
            })
        }))
    }

    /// A JPEG of the viewport for the person's live view, base64 as Chromium sends it (the
    /// window shows it as is). Not an agent's capture: no receipt, no checks beyond Chromium's.
    pub async fn preview(&self, quality: u8) -> Result<String, BrowserError> {
        self.no_dialog()?;
        self.screenshot(json!({
            "format": "jpeg", "quality": quality, "optimizeForSpeed": true,
        }))
        .await
    }

    /// The person's live view as Chromium paints it: `Page.startScreencast` sends a JPEG of
    /// the viewport (base64) only when the page repaints, so a still page costs nothing. Each
    /// frame is acknowledged (Chromium sends the next only then) and goes to `frames`; the
    /// screencast stops when `frames` closes or the tab ends.
    pub async fn screencast(
        &self,
        quality: u8,
        frames: &tokio::sync::mpsc::Sender<String>,
    ) -> Result<(), BrowserError> {
        self.no_dialog()?;
        let mut events = self
            .page
            .event_listener::<EventScreencastFrame>()
            .await
            .map_err(|e| self.browser.failure(cdp_error(e)))?;
        self.raw(
            "Page.startScreencast",
            json!({ "format": "jpeg", "quality": quality }),
        )
        .await?;
        let ended = loop {
            tokio::select! {
                frame = events.next() => {
                    let Some(frame) = frame else { break Ok(()) };
                    if let Err(error) = self
                        .raw("Page.screencastFrameAck", json!({ "sessionId": frame.session_id }))
                        .await
                    {
                        break Err(error);
                    }
                    if frames.send(String::from(frame.data.clone())).await.is_err() {
                        break Ok(());
                    }
                }
                () = frames.closed() => break Ok(()),
            }
        };
        if let Err(error) = self.raw("Page.stopScreencast", json!({})).await {
            tracing::debug!("tab {}: stopping the screencast: {error}", self.id);
        }
        ended
    }

    /// `Page.captureScreenshot`: the image, base64.
    async fn screenshot(&self, params: Value) -> Result<String, BrowserError> {
        let started = std::time::Instant::now();
        let mut answer = self.raw("Page.captureScreenshot", params).await?;
        tracing::debug!(
            "tab {}: Page.captureScreenshot took {:?}",
            self.id,
            started.elapsed()
        );
        match answer["data"].take() {
            Value::String(data) => Ok(data),
            _ => Err(BrowserError::Cdp("Chromium returned no image".to_owned())),
        }
    }

    /// The page printed to PDF by Chromium (`Page.printToPDF`).
    pub async fn pdf(&self, landscape: bool, background: bool) -> Result<Vec<u8>, BrowserError> {
        self.no_dialog()?;
        let answer = self
            .raw(
                "Page.printToPDF",
                json!({ "landscape": landscape, "printBackground": background }),
            )
            .await?;
        let data = answer["data"].as_str().unwrap_or_default();
        let bytes = BASE64_STANDARD
            .decode(data)
            .map_err(|error| BrowserError::Cdp(format!("the PDF was not base64: {error}")))?;
        if !bytes.starts_with(b"%PDF") {
            return Err(BrowserError::Cdp(
                "Chromium's answer is not a PDF".to_owned(),
            ));
        }
        Ok(bytes)
    }
}

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

/// The longest side, in image pixels, of a capture a capture set keeps: what its comparison
/// decodes whole (`lomi_capture::MAX_SIDE`); a larger area is scaled down to it.
pub const MAX_CAPTURE_SIDE: f64 = 16_384.0;

/// How many of the viewport's screens the image in an answer shows at most: two screens at
/// full width stay readable where a client or model shrinks an image to about 1.2 megapixels.
pub const ANSWER_SCREENS: f64 = 2.0;

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

/// How much of a large area a capture draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CaptureLimit {
    /// The whole area, scaled down where it is larger than [`MAX_CAPTURE_SIDE`] (a capture set's
    /// file, compared pixel by pixel).
    FitSide,
    /// The area's top, at most [`ANSWER_SCREENS`] viewport heights, at the scale asked.
    Screens,
    /// The whole area at the scale asked, up to `lomi_capture::MAX_SAVED_SIDE` pixels a side.
    Whole,
}

/// A capture as Chromium drew it.
#[derive(Clone, Debug)]
pub struct Taken {
    pub png: Vec<u8>,
    /// Image pixels per CSS pixel.
    pub scale: f64,
    /// The area's height in CSS pixels (all of it, even when only its top was drawn); `None`
    /// for the viewport at full scale, whose height is the image's.
    pub area_height: Option<f64>,
    /// Image rows of [`ANSWER_SCREENS`] viewport heights at that scale (`u32::MAX` when the
    /// image is one screen anyway).
    pub screens_rows: u32,
}

impl Tab {
    /// Captures a PNG of the tab: Chromium's own bytes, clipped and scaled by Chromium. `fast`
    /// has Chromium compress for speed (about twice the bytes, half the time); without it the
    /// PNG is as small as Chromium makes it (for a file kept and compared). `limit` says how
    /// much of a large area is drawn; text is never scaled below `scale` except for
    /// [`CaptureLimit::FitSide`].
    pub async fn capture(
        &self,
        area: &CaptureArea,
        scale: f64,
        fast: bool,
        limit: CaptureLimit,
    ) -> Result<Taken, BrowserError> {
        let mut scale = scale;
        self.no_dialog()?;
        let mut params = json!({ "format": "png", "optimizeForSpeed": fast });
        // The viewport as it is: nothing to measure, and no more than one screen.
        if matches!(area, CaptureArea::Viewport) && scale >= 1.0 {
            let data = self.screenshot(params).await?;
            return Ok(Taken {
                png: decoded(data)?,
                scale,
                area_height: None,
                screens_rows: u32::MAX,
            });
        }
        // An element is revealed first (which may scroll), so the viewport is read after.
        let element = match area {
            CaptureArea::Element {
                snapshot_id,
                element_ref,
            } => Some(self.element_rect(snapshot_id, element_ref).await?),
            _ => None,
        };
        // The visual viewport in page CSS pixels.
        let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
        let v = &metrics["cssVisualViewport"];
        let viewport = ClipRect {
            x: v["pageX"].as_f64().unwrap_or(0.0),
            y: v["pageY"].as_f64().unwrap_or(0.0),
            width: v["clientWidth"].as_f64().unwrap_or(0.0),
            height: v["clientHeight"].as_f64().unwrap_or(0.0),
        };
        let clip = match area {
            CaptureArea::Viewport => viewport,
            CaptureArea::FullPage => {
                let size = &metrics["cssContentSize"];
                ClipRect {
                    x: 0.0,
                    y: 0.0,
                    width: size["width"].as_f64().unwrap_or(0.0).ceil(),
                    height: size["height"].as_f64().unwrap_or(0.0).ceil(),
                }
            }
            CaptureArea::Element { .. } => {
                let rect = element.unwrap_or(viewport);
                ClipRect {
                    x: rect.x + viewport.x,
                    y: rect.y + viewport.y,
                    ..rect
                }
            }
            CaptureArea::Clip(clip) => *clip,
        };
        let screens = viewport.height.max(1.0) * ANSWER_SCREENS;
        let mut clip = clip;
        if clip.width < 1.0 || clip.height < 1.0 {
            return Err(BrowserError::Invalid(
                "the area to capture is empty".to_owned(),
            ));
        }
        let area_height = clip.height;
        match limit {
            CaptureLimit::FitSide => {
                // A taller (or wider) area is scaled down to fit, not refused.
                let side = clip.width.max(clip.height) * scale;
                if side > MAX_CAPTURE_SIDE {
                    scale *= MAX_CAPTURE_SIDE / side;
                }
            }
            CaptureLimit::Screens => clip.height = clip.height.min(screens),
            CaptureLimit::Whole => {
                let most = f64::from(lomi_capture::MAX_SAVED_SIDE);
                if clip.width.max(clip.height) * scale > most {
                    return Err(BrowserError::Invalid(format!(
                        "the area is {} x {} CSS pixels; at most {most} image pixels a side are saved at once: save clips of it",
                        clip.width, clip.height
                    )));
                }
            }
        }
        params["clip"] = json!({
            "x": clip.x, "y": clip.y, "width": clip.width, "height": clip.height, "scale": scale,
        });
        // Drawing beyond the viewport makes Chromium lay the page out again at the area's size
        // (about 0.2 s on a long page even for one screen): only ask for it when the area is not
        // all on screen.
        let on_screen = clip.x >= viewport.x
            && clip.y >= viewport.y
            && clip.x + clip.width <= viewport.x + viewport.width
            && clip.y + clip.height <= viewport.y + viewport.height;
        if !on_screen {
            params["captureBeyondViewport"] = json!(true);
        }
        let data = self.screenshot(params).await?;
        Ok(Taken {
            png: decoded(data)?,
            scale,
            area_height: Some(area_height),
            screens_rows: (screens * scale).round() as u32,
        })
    }

    /// The rectangle (CSS pixels of the viewport) of an element of a snapshot, scrolled into
    /// view.
    async fn element_rect(
        &self,
        snapshot_id: &str,
        element_ref: &str,
    ) -> Result<ClipRect, BrowserError> {
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
        Ok(ClipRect {
            x: rect["x"].as_f64().unwrap_or(0.0) + ox,
            y: rect["y"].as_f64().unwrap_or(0.0) + oy,
            width: rect["width"].as_f64().unwrap_or(0.0),
            height: rect["height"].as_f64().unwrap_or(0.0),
        })
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

/// Chromium's base64 image as bytes.
fn decoded(data: String) -> Result<Vec<u8>, BrowserError> {
    BASE64_STANDARD
        .decode(data)
        .map_err(|e| BrowserError::Cdp(format!("Chromium's image is not base64: {e}")))
}

//! The pointer actions (click, hover, scroll, drag), the dialog's answer and the page's own
//! script, each confirmed by the page where it can be; and how an action went wrong.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::input::EventDragIntercepted;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::aim::{Aimed, Call, Resolved};
use super::{ACK_LIMIT, Tab, cdp_error};
use crate::BrowserError;

/// How long a click aims again at an element the page keeps moving away from its press.
const AIM_LIMIT: Duration = Duration::from_secs(5);

/// Where an action lands.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    Element {
        snapshot_id: &'a str,
        element_ref: &'a str,
    },
    Point {
        x: f64,
        y: f64,
    },
    None,
}

impl<'a> Target<'a> {
    /// The element a ref of a snapshot names.
    pub(super) fn element(snapshot_id: &'a str, element_ref: &'a str) -> Self {
        Target::Element {
            snapshot_id,
            element_ref,
        }
    }
}

/// What a confirmed action observed.
#[derive(Clone, Debug)]
pub struct ActionResult {
    pub element: Option<String>,
    pub observed: Value,
}

/// How an action went wrong, by what it may have done.
#[derive(Debug)]
pub enum ActionError {
    /// Refused before anything was sent to the page.
    Refused(BrowserError),
    /// Sending to the page failed part-way: it may or may not have arrived.
    Dispatched(BrowserError),
    /// Sent, but the page did not confirm it reached the element.
    Unconfirmed(String),
    /// The page answered that it did not happen (a failed navigation).
    Failed(String),
}

impl From<BrowserError> for ActionError {
    fn from(error: BrowserError) -> Self {
        ActionError::Refused(error)
    }
}

/// Where a click's press landed.
enum Pressed {
    Reached(ActionResult),
    /// Elsewhere (the element moved): the page saw no click (at most the press, when the
    /// element moved away before the release). What happened, in words.
    Missed(String),
}

impl Tab {
    /// Clicks an element of a snapshot, or a viewport point. A press the page's moving
    /// content took away from the element never reaches the page; the click aims again, for
    /// at most [`AIM_LIMIT`].
    pub async fn click(
        &self,
        target: Target<'_>,
        button: &str,
        count: u8,
    ) -> Result<ActionResult, ActionError> {
        let deadline = tokio::time::Instant::now() + AIM_LIMIT;
        let mut missed = 0u32;
        loop {
            // At a point, whatever is under it takes the release.
            let event = match (target, button) {
                (Target::Point { .. }, _) => "mouseup",
                (_, "right") => "contextmenu",
                (_, "middle") => "auxclick",
                _ if count == 2 => "dblclick",
                _ => "click",
            };
            let aimed = self.aim("click", target, &[event], true).await?;
            match self.click_at(&aimed, button, count).await? {
                Pressed::Reached(mut done) => {
                    // How many presses the page's moving content took elsewhere first.
                    done.observed["missedPresses"] = json!(missed);
                    return Ok(done);
                }
                Pressed::Missed(hit) => {
                    missed += 1;
                    self.disarm(&aimed).await;
                    if tokio::time::Instant::now() < deadline {
                        tracing::debug!("tab {}: {hit}; aiming again", self.id);
                        continue;
                    }
                    let name = match target {
                        Target::Element { element_ref, .. } => element_ref,
                        _ => "the element",
                    };
                    return Err(ActionError::Refused(BrowserError::Stale(format!(
                        "{name} kept moving: for {} s every click missed it (the last time {hit}), and \
                         each was stopped before the page saw a click; wait for the page to settle \
                         (lomi_browser_wait), take a new snapshot and try again",
                        AIM_LIMIT.as_secs()
                    ))));
                }
            }
        }
    }

    /// Presses and releases the mouse where `aimed` says, and waits for the page's word.
    async fn click_at(
        &self,
        aimed: &Aimed,
        button: &str,
        count: u8,
    ) -> Result<Pressed, ActionError> {
        let Aimed {
            x,
            y,
            ref token,
            ref element,
            ..
        } = *aimed;
        self.mouse("mouseMoved", x, y, "none", 0).await?;
        // From here on an event may have reached the page.
        let dispatched = async {
            for n in 1..=count {
                self.mouse("mousePressed", x, y, button, n).await?;
                // The release of a click that opens a dialog is only answered once the dialog
                // closes: do not wait for it.
                let tab = self.clone();
                let button = button.to_owned();
                let release =
                    tokio::spawn(async move { tab.mouse("mouseReleased", x, y, &button, n).await });
                if n == count {
                    return Ok::<_, BrowserError>(release);
                }
                match release.await {
                    Ok(result) => result?,
                    Err(error) => return Err(BrowserError::Cdp(error.to_string())),
                }
            }
            Err(BrowserError::Invalid(
                "clickCount must be 1 to 3".to_owned(),
            ))
        };
        let release = dispatched.await.map_err(ActionError::Dispatched)?;
        let kind = self.acknowledged(token).await?;
        // The release is answered once the page handled it, unless a dialog opened meanwhile
        // or the page closed itself (`wait_until` ends when the tab's target is destroyed).
        tokio::select! {
            released = release => {
                // A page that closed itself on the click answers the release with the tab's
                // end: the event was confirmed above, so that is the click's own effect.
                if let Ok(Err(error)) = released
                    && !self.lock().closed
                {
                    return Err(ActionError::Dispatched(error));
                }
            }
            _dialog = self.wait_until(ACK_LIMIT, |state| state.dialog.is_some()) => {}
        }
        if let Some(hit) = kind.strip_prefix("missed ") {
            return Ok(Pressed::Missed(format!("the press landed on {hit}")));
        }
        if let Some(hit) = kind.strip_prefix("released ") {
            return Ok(Pressed::Missed(format!(
                "the press reached it but the content moved before the release, which landed on {hit}"
            )));
        }
        Ok(Pressed::Reached(ActionResult {
            element: Some(element.clone()),
            observed: json!({ "event": kind, "x": x, "y": y }),
        }))
    }

    /// Moves the mouse over an element or a point.
    pub async fn hover(&self, target: Target<'_>) -> Result<ActionResult, ActionError> {
        let aimed = self
            .aim("hover", target, &["mouseover", "mousemove"], false)
            .await?;
        self.mouse("mouseMoved", aimed.x, aimed.y, "none", 0)
            .await
            .map_err(ActionError::Dispatched)?;
        let kind = self.acknowledged(&aimed.token).await?;
        Ok(ActionResult {
            element: Some(aimed.element),
            observed: json!({ "event": kind, "x": aimed.x, "y": aimed.y }),
        })
    }

    /// Scrolls an element into view, or turns the wheel at a point (or the viewport's centre).
    pub async fn scroll(
        &self,
        target: Target<'_>,
        delta: Option<(f64, f64)>,
    ) -> Result<ActionResult, ActionError> {
        match (target, delta) {
            (Target::Element { element_ref, .. }, None) => {
                let answer = self
                    .arm(target, Call::Acts, |number, _| format!("reveal({number})"))
                    .await?
                    .answer;
                if answer["visible"] != true {
                    return Err(ActionError::Unconfirmed(format!(
                        "{element_ref} is still outside the viewport after scrolling"
                    )));
                }
                Ok(ActionResult {
                    element: answer["element"].as_str().map(str::to_owned),
                    observed: json!({ "visible": true, "scrollX": answer["scrollX"], "scrollY": answer["scrollY"] }),
                })
            }
            (target, Some((dx, dy))) => {
                let (x, y) = match target {
                    Target::Point { x, y } => (x, y),
                    Target::None => {
                        let emulation = self.browser.emulation();
                        (
                            f64::from(emulation.width) / 2.0,
                            f64::from(emulation.height) / 2.0,
                        )
                    }
                    Target::Element { .. } => {
                        return Err(BrowserError::Invalid(
                            "scroll takes a ref (to bring it into view) or a delta, not both"
                                .to_owned(),
                        )
                        .into());
                    }
                };
                let aimed = self
                    .aim("scroll", Target::Point { x, y }, &["wheel"], false)
                    .await?;
                self.raw(
                    "Input.dispatchMouseEvent",
                    json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy }),
                )
                .await
                .map_err(ActionError::Dispatched)?;
                let kind = self.acknowledged(&aimed.token).await?;
                Ok(ActionResult {
                    element: Some(aimed.element),
                    observed: json!({ "event": kind, "deltaX": dx, "deltaY": dy }),
                })
            }
            _ => Err(BrowserError::Invalid(
                "scroll needs a ref to bring into view, or deltaX/deltaY".to_owned(),
            )
            .into()),
        }
    }

    /// Drags element `from` onto element `to` (refs of one snapshot and one frame) with the
    /// mouse. An HTML5 drag the page starts is intercepted and dropped with Chromium's drag
    /// events (a headless Chromium has no drag loop of its own); otherwise the mouse is released
    /// over the target. Confirmed by the drop (or release) reaching the target.
    pub async fn drag(
        &self,
        snapshot_id: &str,
        from: &str,
        to: &str,
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        // Both refs are checked before the drop's watch is armed at `to`.
        let source = self.resolve(snapshot_id, from)?;
        if source.frame_prefix != self.resolve(snapshot_id, to)?.frame_prefix {
            return Err(BrowserError::Invalid(format!(
                "{from} and {to} are in different frames; a drag stays within one frame"
            ))
            .into());
        }
        let to_target = Target::element(snapshot_id, to);
        let watch = self
            .arm(to_target, Call::Arms, |number, token| {
                format!("dropWatch({number}, {}, {})", source.number, json!(token))
            })
            .await?;
        let watched = Aimed {
            x: 0.0,
            y: 0.0,
            token: watch.token.clone(),
            element: watch.element.clone(),
            context: Some(watch.at.context),
        };
        let result = self
            .drag_armed(snapshot_id, from, to, &watch.at, &watch.token)
            .await;
        self.disarm(&watched).await;
        if let Err(error) = self
            .raw("Input.setInterceptDrags", json!({ "enabled": false }))
            .await
        {
            tracing::debug!("setInterceptDrags: {error}");
        }
        let (from_element, kind, html5) = result?;
        Ok(ActionResult {
            element: Some(from_element),
            observed: json!({ "event": kind, "target": watch.element, "html5": html5 }),
        })
    }

    async fn drag_armed(
        &self,
        snapshot_id: &str,
        from: &str,
        to: &str,
        target: &Resolved,
        drop_token: &str,
    ) -> Result<(String, String, bool), ActionError> {
        let from_target = Target::element(snapshot_id, from);
        let pressed = self.aim("drag", from_target, &["mousedown"], false).await?;
        let (ox, oy) = self.frame_origin(target).await?;
        self.raw("Input.setInterceptDrags", json!({ "enabled": true }))
            .await?;
        let mut intercepted = self
            .page
            .event_listener::<EventDragIntercepted>()
            .await
            .map_err(|e| self.browser.failure(cdp_error(e)))?;
        self.mouse("mouseMoved", pressed.x, pressed.y, "none", 0)
            .await?;
        // From here on an event may have reached the page.
        self.mouse("mousePressed", pressed.x, pressed.y, "left", 1)
            .await
            .map_err(ActionError::Dispatched)?;
        let press = self.acknowledged(&pressed.token).await;
        self.disarm(&pressed).await;
        press.map_err(|u| ActionError::Unconfirmed(format!("the press on {from}: {}", u.0)))?;
        let point = self
            .helper(target.context, &format!("dropPoint({})", target.number))
            .await
            .map_err(ActionError::Dispatched)?;
        let point = Self::checked(point, to).map_err(ActionError::Dispatched)?;
        let (x, y) = (
            point["x"].as_f64().unwrap_or(0.0) + ox,
            point["y"].as_f64().unwrap_or(0.0) + oy,
        );
        // Two steps, so the page sees the pointer leave the source before it reaches the target
        // (Chromium starts a drag once the pointer moved a few pixels).
        let (mx, my) = ((pressed.x + x) / 2.0, (pressed.y + y) / 2.0);
        for (px, py) in [(mx, my), (x, y)] {
            self.raw(
                "Input.dispatchMouseEvent",
                json!({ "type": "mouseMoved", "x": px, "y": py, "button": "left", "buttons": 1 }),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        }
        // The move was answered once the page handled it, dragstart included.
        let started = self
            .helper(
                target.context,
                &format!("dragStarted({})", json!(drop_token)),
            )
            .await
            .map_err(ActionError::Dispatched)?["started"]
            == true;
        if started {
            let data = tokio::time::timeout(ACK_LIMIT, intercepted.next())
                .await
                .ok()
                .flatten()
                .ok_or_else(|| {
                    ActionError::Unconfirmed(
                        "the page began a drag but Chromium did not hand it over".to_owned(),
                    )
                })?
                .data
                .clone();
            // chromiumoxide leaves out an empty `items`, which Chromium requires (a drag whose
            // page set no data).
            let mut data = serde_json::to_value(&data).unwrap_or_else(|_| json!({}));
            if data.get("items").is_none() {
                data["items"] = json!([]);
            }
            for kind in ["dragEnter", "dragOver", "drop"] {
                self.raw(
                    "Input.dispatchDragEvent",
                    json!({ "type": kind, "x": x, "y": y, "data": data }),
                )
                .await
                .map_err(ActionError::Dispatched)?;
            }
        } else {
            self.mouse("mouseReleased", x, y, "left", 1)
                .await
                .map_err(ActionError::Dispatched)?;
        }
        let kind = self.acknowledged(drop_token).await?;
        if kind == "dragend" {
            return Err(ActionError::Failed(format!(
                "{to} did not take the drop: the drag from {from} ended without one (the page's \
                 dragover handler did not call preventDefault there)"
            )));
        }
        Ok((pressed.element, kind, started))
    }

    /// Accepts or dismisses the open JavaScript dialog; confirmed when it closed.
    pub async fn dialog_answer(
        &self,
        accept: bool,
        prompt: Option<&str>,
    ) -> Result<ActionResult, ActionError> {
        let Some(dialog) = self.dialog() else {
            return Err(BrowserError::Invalid(
                "no JavaScript dialog is open in the active tab".to_owned(),
            )
            .into());
        };
        let mut params = json!({ "accept": accept });
        if let Some(prompt) = prompt {
            params["promptText"] = json!(prompt);
        }
        self.raw("Page.handleJavaScriptDialog", params)
            .await
            .map_err(ActionError::Dispatched)?;
        if !self
            .wait_until(ACK_LIMIT, |state| state.dialog.is_none())
            .await
        {
            return Err(ActionError::Unconfirmed(
                "the dialog did not close".to_owned(),
            ));
        }
        Ok(ActionResult {
            element: None,
            observed: json!({ "dialog": dialog.kind, "accepted": accept }),
        })
    }

    /// Evaluates an expression in the page's own world (awaiting promises).
    pub async fn evaluate(
        &self,
        expression: &str,
    ) -> Result<(Value, String, Option<String>), ActionError> {
        self.no_dialog()?;
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": expression, "returnByValue": true, "awaitPromise": true,
                    "userGesture": true, "timeout": 30000,
                }),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        let result = &answer["result"];
        let kind = result["type"].as_str().unwrap_or("undefined").to_owned();
        let exception = answer.get("exceptionDetails").map(|d| {
            d["exception"]["description"]
                .as_str()
                .or_else(|| d["text"].as_str())
                .unwrap_or("exception")
                .chars()
                .take(4096)
                .collect::<String>()
        });
        Ok((truncate_value(result["value"].clone()), kind, exception))
    }
}

pub(super) fn truncate_value(value: Value) -> Value {
    const LIMIT: usize = 64 * 1024;
    let text = value.to_string();
    if text.len() <= LIMIT {
        value
    } else {
        let mut end = LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        json!({ "truncatedJson": &text[..end] })
    }
}

//! The actions on form fields and keys: type, press, select, upload, and fill (several fields
//! of one snapshot, each confirmed as its own action is).

use lomi_snapshot::parse_key;
use serde_json::{Value, json};

use super::actions::truncate_value;
use super::aim::{Armed, Call};
use super::{ActionError, ActionResult, Tab, Target};
use crate::BrowserError;

impl Tab {
    /// Inserts text into an element (replacing its content unless `replace` is false).
    pub async fn type_text(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        text: &str,
        replace: bool,
    ) -> Result<ActionResult, ActionError> {
        let target = Target::element(snapshot_id, element_ref);
        let armed = self
            .arm(target, Call::Arms, |number, token| {
                format!("focus({number}, {replace}, {})", json!(token))
            })
            .await?;
        let sent = if text.is_empty() {
            self.key_event("Backspace").await
        } else {
            self.raw("Input.insertText", json!({ "text": text }))
                .await
                .map(|_| ())
        };
        sent.map_err(ActionError::Dispatched)?;
        let kind = self.acknowledged(&armed.token).await?;
        let value = self.read_back(&armed, "value").await;
        Ok(ActionResult {
            element: Some(armed.element),
            observed: json!({ "event": kind, "value": truncate_value(value) }),
        })
    }

    /// Presses a key (with modifiers) at an element, or at the focused element.
    pub async fn press(&self, target: Target<'_>, key: &str) -> Result<ActionResult, ActionError> {
        if let Target::Point { .. } = target {
            return Err(BrowserError::Invalid(
                "press takes a ref, or no target for the focused element".to_owned(),
            )
            .into());
        }
        parse_key(key).map_err(BrowserError::from)?;
        // No target: the helper listens at the focused element (number 0).
        let armed = self
            .arm(target, Call::Arms, |number, token| {
                format!("key({number}, {})", json!(token))
            })
            .await?;
        self.key_event(key).await.map_err(ActionError::Dispatched)?;
        let kind = self.acknowledged(&armed.token).await?;
        Ok(ActionResult {
            element: Some(armed.element),
            observed: json!({ "event": kind, "key": key }),
        })
    }

    /// Dispatches one key press: keyDown (with its text), then keyUp.
    async fn key_event(&self, key: &str) -> Result<(), BrowserError> {
        let key = parse_key(key)?;
        let mut down = json!({
            "type": if key.text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key.key,
            "code": key.code,
            "windowsVirtualKeyCode": key.key_code,
            "modifiers": key.modifiers,
        });
        if let Some(text) = &key.text {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        self.raw("Input.dispatchKeyEvent", down).await?;
        // A key that opens a dialog holds its keyUp until the dialog closes.
        let tab = self.clone();
        let up = json!({
            "type": "keyUp", "key": key.key, "code": key.code,
            "windowsVirtualKeyCode": key.key_code, "modifiers": key.modifiers,
        });
        tokio::spawn(async move {
            if let Err(error) = tab.raw("Input.dispatchKeyEvent", up).await {
                tracing::debug!("keyUp: {error}");
            }
        });
        Ok(())
    }

    /// Selects exactly the given options of a select element.
    pub async fn select(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        values: &[String],
    ) -> Result<ActionResult, ActionError> {
        let target = Target::element(snapshot_id, element_ref);
        let values = json!(values);
        let answer = self
            .arm(target, Call::Acts, |number, _| {
                format!("select({number}, {values})")
            })
            .await?
            .answer;
        Ok(ActionResult {
            element: answer["element"].as_str().map(str::to_owned),
            observed: json!({ "selected": answer["selected"] }),
        })
    }

    /// Sets a file input's files (absolute paths, already confined by the caller).
    pub async fn upload(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        files: &[String],
    ) -> Result<ActionResult, ActionError> {
        let target = Target::element(snapshot_id, element_ref);
        let armed = self
            .arm(target, Call::Arms, |number, token| {
                format!("fileInput({number}, {})", json!(token))
            })
            .await?;
        let object = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!("globalThis.__lomi.element({})", armed.at.number),
                    "contextId": armed.at.context,
                }),
            )
            .await?;
        let object_id = object["result"]["objectId"].clone();
        if object_id.is_null() {
            return Err(
                BrowserError::Stale(format!("{element_ref} is no longer in the page")).into(),
            );
        }
        self.raw(
            "DOM.setFileInputFiles",
            json!({ "files": files, "objectId": object_id }),
        )
        .await
        .map_err(ActionError::Dispatched)?;
        let kind = self.acknowledged(&armed.token).await?;
        let names = self.read_back(&armed, "files").await;
        Ok(ActionResult {
            element: armed.answer["element"].as_str().map(str::to_owned),
            observed: json!({ "event": kind, "files": names }),
        })
    }

    /// Fills several fields of one snapshot in order, each confirmed as `type`, `select` and
    /// `click` confirm theirs. Every ref and value is checked before the first field is touched;
    /// a failure after that says which fields were already filled.
    pub async fn fill(
        &self,
        snapshot_id: &str,
        fields: &[(String, String)],
    ) -> Result<ActionResult, ActionError> {
        let mut kinds = Vec::with_capacity(fields.len());
        for (element_ref, value) in fields {
            let field = self.field(snapshot_id, element_ref).await?.answer;
            let kind = field["kind"].as_str().unwrap_or_default().to_owned();
            let refuse = |why: String| Err(ActionError::Refused(BrowserError::Invalid(why)));
            if field["disabled"] == true {
                return refuse(format!("{element_ref} is disabled"));
            }
            match kind.as_str() {
                "text" | "select" => {}
                "checkbox" | "radio" if value == "true" || value == "false" => {}
                "checkbox" | "radio" => {
                    return refuse(format!(
                        "{element_ref} is a {kind}: its value is \"true\" or \"false\", not {value:?}"
                    ));
                }
                _ => {
                    return refuse(format!(
                        "{element_ref} ({}) is not a form field: fill takes text inputs, textareas, \
                         checkboxes, radios and selects",
                        field["element"].as_str().unwrap_or_default()
                    ));
                }
            }
            if kind == "radio" && value == "false" && field["checked"] == false {
                // Already as asked.
            } else if kind == "radio" && value == "false" {
                return refuse(format!(
                    "{element_ref} is a checked radio: choose another radio of its group instead"
                ));
            }
            kinds.push(kind);
        }
        let mut done: Vec<Value> = Vec::with_capacity(fields.len());
        for ((element_ref, value), kind) in fields.iter().zip(&kinds) {
            let filled = self.fill_one(snapshot_id, element_ref, value, kind).await;
            match filled {
                Ok(observed) => done
                    .push(json!({ "elementRef": element_ref, "kind": kind, "observed": observed })),
                Err(error) if done.is_empty() => return Err(error),
                Err(error) => {
                    let before = done
                        .iter()
                        .filter_map(|d| d["elementRef"].as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    let why = |e: &dyn std::fmt::Display| {
                        format!("{before} filled; then {element_ref}: {e}")
                    };
                    return Err(match error {
                        ActionError::Refused(e) | ActionError::Dispatched(e) => {
                            ActionError::Failed(why(&e))
                        }
                        ActionError::Failed(w) => ActionError::Failed(why(&w)),
                        ActionError::Unconfirmed(w) => ActionError::Unconfirmed(why(&w)),
                    });
                }
            }
        }
        Ok(ActionResult {
            element: None,
            observed: json!({ "fields": done }),
        })
    }

    async fn fill_one(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        value: &str,
        kind: &str,
    ) -> Result<Value, ActionError> {
        match kind {
            "text" => Ok(self
                .type_text(snapshot_id, element_ref, value, true)
                .await?
                .observed),
            "select" => Ok(self
                .select(snapshot_id, element_ref, &[value.to_owned()])
                .await?
                .observed),
            _ => {
                let want = value == "true";
                let field = self.field(snapshot_id, element_ref).await?;
                let state = |answer: Value| answer["checked"] == true;
                if state(field.answer) == want {
                    return Ok(json!({ "checked": want, "changed": false }));
                }
                self.click(Target::element(snapshot_id, element_ref), "left", 1)
                    .await?;
                let field = self
                    .helper(field.at.context, &format!("field({})", field.at.number))
                    .await
                    .map_err(ActionError::Dispatched)?;
                let now =
                    state(Self::checked(field, element_ref).map_err(ActionError::Dispatched)?);
                if now != want {
                    return Err(ActionError::Failed(format!(
                        "{element_ref} was clicked but the page kept it {}",
                        if now { "checked" } else { "unchecked" }
                    )));
                }
                Ok(json!({ "checked": now, "changed": true }))
            }
        }
    }

    /// What a form field is (its kind, whether it is disabled or checked), read through the
    /// actions' preamble.
    async fn field(&self, snapshot_id: &str, element_ref: &str) -> Result<Armed, ActionError> {
        let target = Target::element(snapshot_id, element_ref);
        self.arm(target, Call::Arms, |number, _| format!("field({number})"))
            .await
    }

    /// What a confirmed action left in its element, for the agent to see (the helper's
    /// `what`: `value`, `files`); null when the page no longer answers.
    async fn read_back(&self, armed: &Armed, what: &str) -> Value {
        self.helper(armed.at.context, &format!("{what}({})", armed.at.number))
            .await
            .map(|answer| answer[what].clone())
            .unwrap_or(Value::Null)
    }
}

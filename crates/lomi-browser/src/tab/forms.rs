//! The actions on form fields and keys: type, press, select, upload, and fill (several fields
//! of one snapshot, each confirmed as its own action is).

use lomi_snapshot::parse_key;
use serde_json::{Value, json};

use super::actions::truncate_value;
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
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!("focus({}, {replace}, {})", resolved.number, json!(token)),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let element = answer["element"].as_str().unwrap_or_default().to_owned();
        let sent = if text.is_empty() {
            self.key_event("Backspace").await
        } else {
            self.raw("Input.insertText", json!({ "text": text }))
                .await
                .map(|_| ())
        };
        sent.map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        let value = self
            .helper(resolved.context, &format!("value({})", resolved.number))
            .await
            .map(|v| v["value"].clone())
            .unwrap_or(Value::Null);
        Ok(ActionResult {
            element: Some(element),
            observed: json!({ "event": kind, "value": truncate_value(value) }),
        })
    }

    /// Presses a key (with modifiers) at an element, or at the focused element.
    pub async fn press(&self, target: Target<'_>, key: &str) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        parse_key(key).map_err(BrowserError::from)?;
        let (context, number, label) = match target {
            Target::Element {
                snapshot_id,
                element_ref,
            } => {
                let resolved = self.resolve(snapshot_id, element_ref)?;
                (resolved.context, resolved.number, element_ref.to_owned())
            }
            Target::None => {
                let main = self.lock().main_frame.clone();
                (
                    self.world(&main).await?,
                    0,
                    "the focused element".to_owned(),
                )
            }
            Target::Point { .. } => {
                return Err(BrowserError::Invalid(
                    "press takes a ref, or no target for the focused element".to_owned(),
                )
                .into());
            }
        };
        let token = self.token();
        let answer = self
            .helper(context, &format!("key({number}, {})", json!(token)))
            .await?;
        let answer = Self::checked(answer, &label)?;
        let element = answer["element"].as_str().unwrap_or_default().to_owned();
        self.key_event(key).await.map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        Ok(ActionResult {
            element: Some(element),
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
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let answer = self
            .helper(
                resolved.context,
                &format!("select({}, {})", resolved.number, json!(values)),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        let answer = Self::checked(answer, element_ref).map_err(|e| match e {
            // The helper refuses before changing anything.
            e @ (BrowserError::Invalid(_) | BrowserError::Stale(_)) => ActionError::Refused(e),
            other => ActionError::Dispatched(other),
        })?;
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
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!("fileInput({}, {})", resolved.number, json!(token)),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let object = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!("globalThis.__lomi.element({})", resolved.number),
                    "contextId": resolved.context,
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
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        let names = self
            .helper(resolved.context, &format!("files({})", resolved.number))
            .await
            .map(|v| v["files"].clone())
            .unwrap_or(Value::Null);
        Ok(ActionResult {
            element: answer["element"].as_str().map(str::to_owned),
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
        self.no_dialog()?;
        let mut kinds = Vec::with_capacity(fields.len());
        for (element_ref, value) in fields {
            let resolved = self.resolve(snapshot_id, element_ref)?;
            let field = self
                .helper(resolved.context, &format!("field({})", resolved.number))
                .await?;
            let field = Self::checked(field, element_ref)?;
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
                let resolved = self.resolve(snapshot_id, element_ref)?;
                let state = |answer: Value| answer["checked"] == true;
                let field = self
                    .helper(resolved.context, &format!("field({})", resolved.number))
                    .await?;
                if state(Self::checked(field, element_ref)?) == want {
                    return Ok(json!({ "checked": want, "changed": false }));
                }
                let target = Target::Element {
                    snapshot_id,
                    element_ref,
                };
                self.click(target, "left", 1).await?;
                let field = self
                    .helper(resolved.context, &format!("field({})", resolved.number))
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
}

//! The browser's actions on a page: click, hover, type, press, select, scroll, upload, drag and
//! fill. Each is an operation on the active tab through [`BrowserPanels::act`].

use super::*;

impl BrowserPanels {
    /// `lomi_browser_click`.
    pub async fn click(
        &self,
        caller: &PairingId,
        input: BrowserClickInput,
    ) -> Result<OperationView, ToolError> {
        let button = input.button.clone().unwrap_or_else(|| "left".to_owned());
        if !matches!(button.as_str(), "left" | "right" | "middle") {
            return Err(ToolError::invalid("button must be left, right or middle"));
        }
        let count = input.click_count.unwrap_or(1);
        if !(1..=3).contains(&count) {
            return Err(ToolError::invalid("clickCount must be 1 to 3"));
        }
        need_target(
            &input.common().map_err(ToolError::invalid)?.target,
            "click",
            true,
        )?;
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserClickTool>(&input)?,
            &input,
            move |tab, target| {
                Box::pin(async move { tab.click(target_of(&target), &button, count).await })
            },
        )
        .await
    }

    /// `lomi_browser_hover`.
    pub async fn hover(
        &self,
        caller: &PairingId,
        input: BrowserHoverInput,
    ) -> Result<OperationView, ToolError> {
        need_target(
            &input.common().map_err(ToolError::invalid)?.target,
            "hover",
            true,
        )?;
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserHoverTool>(&input)?,
            &input,
            move |tab, target| Box::pin(async move { tab.hover(target_of(&target)).await }),
        )
        .await
    }

    /// `lomi_browser_type`.
    pub async fn type_text(
        &self,
        caller: &PairingId,
        input: BrowserTypeInput,
    ) -> Result<OperationView, ToolError> {
        if input.text.len() > MAX_TYPE_BYTES {
            return Err(ToolError::invalid("text takes at most 64 KiB"));
        }
        let (snapshot_id, element_ref) =
            element_of(&input.common().map_err(ToolError::invalid)?.target, "type")?;
        let text = input.text.clone();
        let replace = input.replace.unwrap_or(true);
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserTypeTool>(&input)?,
            &input,
            move |tab, _| {
                Box::pin(async move {
                    tab.type_text(&snapshot_id, &element_ref, &text, replace)
                        .await
                })
            },
        )
        .await
    }

    /// `lomi_browser_press`.
    pub async fn press(
        &self,
        caller: &PairingId,
        input: BrowserPressInput,
    ) -> Result<OperationView, ToolError> {
        if input.key.is_empty() || input.key.len() > 64 {
            return Err(ToolError::invalid("key must be 1 to 64 characters"));
        }
        let key = input.key.clone();
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserPressTool>(&input)?,
            &input,
            move |tab, target| Box::pin(async move { tab.press(target_of(&target), &key).await }),
        )
        .await
    }

    /// `lomi_browser_select`.
    pub async fn select(
        &self,
        caller: &PairingId,
        input: BrowserSelectInput,
    ) -> Result<OperationView, ToolError> {
        if input.values.is_empty() || input.values.len() > 256 {
            return Err(ToolError::invalid("values must name 1 to 256 options"));
        }
        let (snapshot_id, element_ref) = element_of(
            &input.common().map_err(ToolError::invalid)?.target,
            "select",
        )?;
        let values = input.values.clone();
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserSelectTool>(&input)?,
            &input,
            move |tab, _| {
                Box::pin(async move { tab.select(&snapshot_id, &element_ref, &values).await })
            },
        )
        .await
    }

    /// `lomi_browser_scroll`.
    pub async fn scroll(
        &self,
        caller: &PairingId,
        input: BrowserScrollInput,
    ) -> Result<OperationView, ToolError> {
        let delta = match (input.delta_x, input.delta_y) {
            (None, None) => None,
            (dx, dy) => {
                let (dx, dy) = (dx.unwrap_or(0.0), dy.unwrap_or(0.0));
                if !dx.is_finite()
                    || !dy.is_finite()
                    || dx.abs() > 100_000.0
                    || dy.abs() > 100_000.0
                {
                    return Err(ToolError::invalid(
                        "deltaX and deltaY must be finite, at most 100,000",
                    ));
                }
                Some((dx, dy))
            }
        };
        self.action(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserScrollTool>(&input)?,
            &input,
            move |tab, target| Box::pin(async move { tab.scroll(target_of(&target), delta).await }),
        )
        .await
    }

    /// `lomi_browser_upload`: files from the project root only.
    pub async fn upload(
        &self,
        caller: &PairingId,
        input: BrowserUploadInput,
    ) -> Result<OperationView, ToolError> {
        let common = input.common().map_err(ToolError::invalid)?;
        let (snapshot_id, element_ref) = element_of(&common.target, "upload")?;
        if input.paths.is_empty() || input.paths.len() > MAX_UPLOAD_FILES {
            return Err(ToolError::invalid(format!(
                "paths must name 1 to {MAX_UPLOAD_FILES} files"
            )));
        }
        let paths = input.paths.clone();
        self.act(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserUploadTool>(&input)?,
            &input,
            // Files from the project root only, checked before anything is recorded.
            move |runtime| {
                paths
                    .iter()
                    .map(|p| {
                        confined_existing_file(&runtime.root, p)
                            .map(|real| real.to_string_lossy().into_owned())
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(ToolError::invalid)
            },
            move |tab, files: Vec<String>| {
                Box::pin(async move { tab.upload(&snapshot_id, &element_ref, &files).await })
            },
        )
        .await
    }

    /// `lomi_browser_drag`: drags one element of a snapshot onto another.
    pub async fn drag(
        &self,
        caller: &PairingId,
        input: BrowserDragInput,
    ) -> Result<OperationView, ToolError> {
        if input.element_ref == input.target_ref {
            return Err(ToolError::invalid(
                "elementRef and targetRef name the same element: drag it onto another one",
            ));
        }
        let (snapshot_id, from, to) = (
            input.snapshot_id.clone(),
            input.element_ref.clone(),
            input.target_ref.clone(),
        );
        self.act(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserDragTool>(&input)?,
            &input,
            |_| Ok(()),
            move |tab, ()| Box::pin(async move { tab.drag(&snapshot_id, &from, &to).await }),
        )
        .await
    }

    /// `lomi_browser_fill`: several fields of one snapshot, in order.
    pub async fn fill(
        &self,
        caller: &PairingId,
        input: BrowserFillInput,
    ) -> Result<OperationView, ToolError> {
        if input.fields.is_empty() || input.fields.len() > MAX_FILL_FIELDS {
            return Err(ToolError::invalid(format!(
                "fields must name 1 to {MAX_FILL_FIELDS} fields"
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for field in &input.fields {
            if field.value.len() > MAX_TYPE_BYTES {
                return Err(ToolError::invalid(format!(
                    "the value for {} is over 64 KiB",
                    field.element_ref
                )));
            }
            if !seen.insert(field.element_ref.as_str()) {
                return Err(ToolError::invalid(format!(
                    "{} is named twice in fields",
                    field.element_ref
                )));
            }
        }
        let snapshot_id = input.snapshot_id.clone();
        let fields: Vec<(String, String)> = input
            .fields
            .iter()
            .map(|f| (f.element_ref.clone(), f.value.clone()))
            .collect();
        self.act(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserFillTool>(&input)?,
            &input,
            |_| Ok(()),
            move |tab, ()| Box::pin(async move { tab.fill(&snapshot_id, &fields).await }),
        )
        .await
    }
}

fn target_of(target: &ActionTarget) -> Target<'_> {
    match target {
        ActionTarget::Element {
            snapshot_id,
            element_ref,
        } => Target::Element {
            snapshot_id,
            element_ref,
        },
        ActionTarget::Point { x, y } => Target::Point { x: *x, y: *y },
        ActionTarget::None => Target::None,
    }
}

fn need_target(target: &ActionTarget, action: &str, point: bool) -> Result<(), ToolError> {
    match target {
        ActionTarget::None => Err(ToolError::invalid(if point {
            format!("{action} needs snapshotId + elementRef, or x + y")
        } else {
            format!("{action} needs snapshotId + elementRef")
        })),
        _ => Ok(()),
    }
}

fn element_of(target: &ActionTarget, action: &str) -> Result<(String, String), ToolError> {
    match target {
        ActionTarget::Element {
            snapshot_id,
            element_ref,
        } => Ok((snapshot_id.clone(), element_ref.clone())),
        _ => Err(ToolError::invalid(format!(
            "{action} needs snapshotId + elementRef"
        ))),
    }
}

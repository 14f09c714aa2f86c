//! What the browser writes into the project: a saved capture, a printed PDF and a saved
//! response body. Each write is a project change of its own (a receipt), keyed so that a retry
//! after the browser closed still answers it.

use super::*;

impl BrowserPanels {
    /// `lomi_browser_capture`: the PNG and its metadata; with `save`, also an operation that
    /// writes it into the project.
    pub async fn capture(
        &self,
        caller: &PairingId,
        input: BrowserCaptureInput,
    ) -> Result<(CaptureView, Vec<u8>), ToolError> {
        let area = match (
            input.full_page.unwrap_or(false),
            &input.snapshot_id,
            &input.element_ref,
            input.clip,
        ) {
            (false, None, None, None) => CaptureArea::Viewport,
            (true, None, None, None) => CaptureArea::FullPage,
            (false, Some(snapshot_id), Some(element_ref), None) => CaptureArea::Element {
                snapshot_id: snapshot_id.clone(),
                element_ref: element_ref.clone(),
            },
            (false, None, None, Some(clip)) => {
                let fine = [clip.x, clip.y, clip.width, clip.height]
                    .iter()
                    .all(|v| v.is_finite() && *v >= 0.0);
                if !fine
                    || clip.width < 1.0
                    || clip.height < 1.0
                    || clip.width > 16_384.0
                    || clip.height > 16_384.0
                {
                    return Err(ToolError::invalid(
                        "clip needs x, y ≥ 0 and width, height of 1 to 16,384",
                    ));
                }
                CaptureArea::Clip(clip)
            }
            (_, Some(_), None, _) | (_, None, Some(_), _) => {
                return Err(ToolError::invalid(
                    "elementRef needs the snapshotId it came from, and the other way round",
                ));
            }
            _ => {
                return Err(ToolError::invalid(
                    "capture at most one of fullPage, an element, or clip",
                ));
            }
        };
        let scale = input.scale.unwrap_or(1.0);
        if !(lomi_capture::MIN_SCALE..=lomi_capture::MAX_SCALE).contains(&scale) {
            return Err(ToolError::invalid(format!(
                "scale must be {} to {}",
                lomi_capture::MIN_SCALE,
                lomi_capture::MAX_SCALE
            )));
        }
        // maxBytes bounds the image sent in the answer, which must fit a client's message; with
        // save it bounds the file instead, and the answer shows the file's top.
        let (most, max_bytes) = match &input.save {
            None => (
                MAX_INLINE_IMAGE_BYTES,
                input.max_bytes.unwrap_or(MAX_INLINE_IMAGE_BYTES),
            ),
            Some(_) => (
                MAX_CAPTURE_BYTES,
                input.max_bytes.unwrap_or(MAX_CAPTURE_BYTES),
            ),
        };
        if !(MIN_CAPTURE_BYTES..=most).contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {MIN_CAPTURE_BYTES} to {most}{}",
                if input.save.is_none() {
                    " for a capture sent in the answer (larger ones do not fit a client's message); with save it bounds the file, up to 67,108,864"
                } else {
                    ""
                }
            )));
        }
        // A retry of a saved capture answers its operation with the image it saved, before
        // anything about the browser (gone, crashed, or on another page by now). If that image
        // is no longer in the project, a browser that still runs captures again, and the
        // save answers its earlier operation.
        let earlier = match &input.save {
            Some(save) => match self.saved_before(caller, &input, save).await {
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) => None,
                Err(error) => Some(error),
            },
            None => None,
        };
        let (_record, runtime) = self
            .runtime(caller, &input.panel_id)
            .map_err(|error| earlier.unwrap_or(error))?;
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let tab = runtime.browser.active_tab().map_err(tool_error)?;
        let settings = self.broker.browser_settings();
        let deterministic = input
            .deterministic
            .unwrap_or(settings.deterministic_captures);
        if deterministic {
            let limit = Duration::from_millis(u64::from(settings.default_wait_ms));
            tab.steady(limit).await.map_err(tool_error)?;
        }
        // Never scaled below the scale asked: the answer shows the area's top (two screens at
        // most), a save writes all of it. Chromium compresses for speed (about twice the bytes,
        // half the time) unless the capture is a deterministic one, meant to be kept and
        // compared, which is compressed as far as Chromium goes.
        let limit = if input.save.is_some() {
            CaptureLimit::Whole
        } else {
            CaptureLimit::Screens
        };
        let began = std::time::Instant::now();
        let taken = tab
            .capture(&area, f64::from(scale), !deterministic, limit)
            .await;
        let drawn = began.elapsed();
        if deterministic && let Err(error) = tab.release().await {
            tracing::debug!("releasing the page after a capture: {error}");
        }
        let Taken {
            png,
            scale,
            area_height,
            screens_rows,
        } = taken.map_err(tool_error)?;
        let capture_error = |e: lomi_capture::CaptureError| ToolError::new(e.code(), e.to_string());
        if input.save.is_some() && png.len() > max_bytes as usize {
            return Err(ToolError::invalid(format!(
                "the capture is {} bytes as a PNG, over maxBytes {max_bytes}; raise maxBytes (at most {MAX_CAPTURE_BYTES}) or save a clip of the area",
                png.len()
            )));
        }
        let answer_bytes = if input.save.is_some() {
            MAX_INLINE_IMAGE_BYTES
        } else {
            max_bytes
        } as usize;
        // The image's top that fits the answer, and for a save the whole file's digest, off
        // the async threads (a long page is tens of megabytes).
        let whole = input.save.is_some();
        let (image, drawn_rows, file) = lomi_broker::off_thread(move || {
            let (_, drawn_rows) =
                lomi_capture::inspect_png_within(&png, lomi_capture::MAX_SAVED_SIDE)?;
            let image = lomi_capture::top(&png, screens_rows, answer_bytes)?;
            let file = whole.then(|| {
                let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&png));
                (png, sha256)
            });
            Ok::<_, lomi_capture::CaptureError>((image, drawn_rows, file))
        })
        .await
        .map_err(capture_error)?;
        // Where a capture's time goes (`LOMI_LOG=lomi_browser=debug`): the CDP calls and
        // Chromium's drawing (its own time is logged by `Tab::screenshot`), then Lomi's PNG work.
        tracing::debug!(
            "capture of tab {}: drawn {drawn:?}, PNG checked, cut and hashed {:?}",
            tab.id,
            began.elapsed() - drawn
        );
        let area_rows = area_height.map_or(drawn_rows, |height| (height * scale).round() as u32);
        let cut = image.height < area_rows;
        let area_height = area_height.unwrap_or(f64::from(drawn_rows) / scale);
        let saved = match (&input.save, file) {
            (Some(save), Some((png, sha256))) => {
                let saved = CaptureSaved {
                    path: save.path.clone(),
                    bytes: png.len() as u64,
                    sha256,
                };
                let call =
                    ToolCall::of::<lomi_protocol::tools::browser::BrowserCaptureTool>(&input)?;
                let operation = self
                    .save_into(caller, call, &runtime, save, png, to_json(&saved)?)
                    .await?;
                Some(to_json(&operation)?)
            }
            _ => None,
        };
        Ok((
            CaptureView {
                width: image.width,
                height: image.height,
                bytes: image.png.len() as u64,
                sha256: image.sha256.clone(),
                scale: Some(scale),
                inline: true,
                area_height: cut.then_some(area_height),
                tab_id: tab.id.clone(),
                saved,
            },
            image.png,
        ))
    }

    /// The answer to a retried capture whose save has a receipt: that operation, with the
    /// image it saved read back from the project, whether or not the browser still runs (a
    /// retry never captures again). `None` when there is no such receipt.
    async fn saved_before(
        &self,
        caller: &PairingId,
        input: &BrowserCaptureInput,
        save: &lomi_protocol::tools::browser::CaptureSave,
    ) -> Result<Option<(CaptureView, Vec<u8>)>, ToolError> {
        let Some((prior, operation)) = self
            .saved_by(
                caller,
                ToolCall::of::<lomi_protocol::tools::browser::BrowserCaptureTool>(input)?,
                &input.panel_id,
                (&save.retry_epoch, &save.request_key),
            )
            .await?
        else {
            return Ok(None);
        };
        let saved: Option<CaptureSaved> = operation
            .result
            .clone()
            .and_then(|result| serde_json::from_value(result).ok());
        let details = json!({ "operation": to_json(&operation)? });
        let not_shown = |why: &str| {
            ToolError::new(
                ErrorCode::NotFound,
                format!(
                    "this request was answered before by operation {prior} ({}); {why}: read it with lomi_operation_get",
                    operation.state
                ),
            )
            .with_details(details.clone())
        };
        let Some(saved) = saved else {
            return Err(not_shown("it saved no image to show again"));
        };
        let (Some(workspace), Some(project)) = (&operation.workspace_id, &operation.project_id)
        else {
            return Err(not_shown("it names no project"));
        };
        let (_, root) = self.broker.project_root(caller, workspace, Some(project))?;
        let path = saved.path.clone();
        let read = tokio::task::spawn_blocking(move || {
            confined_existing_file(&root, &path).and_then(|real| {
                std::fs::read(&real).map_err(|error| format!("{}: {error}", real.display()))
            })
        })
        .await
        .map_err(|error| ToolError::internal(error.to_string()))?;
        let Ok(png) = read else {
            return Err(not_shown(&format!("{} is gone", saved.path)));
        };
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&png));
        if digest != saved.sha256 {
            return Err(not_shown(&format!("{} has changed since", saved.path)));
        }
        let shown = lomi_broker::off_thread(move || {
            lomi_capture::top(&png, RETRY_IMAGE_ROWS, MAX_INLINE_IMAGE_BYTES as usize)
        })
        .await;
        let Ok(image) = shown else {
            return Err(not_shown(&format!("{} is no longer a PNG", saved.path)));
        };
        // The image is the saved one (its top), not a capture of any tab now.
        let tab_id = String::new();
        Ok(Some((
            CaptureView {
                width: image.width,
                height: image.height,
                bytes: image.png.len() as u64,
                sha256: image.sha256,
                scale: None,
                inline: true,
                area_height: None,
                tab_id,
                saved: Some(to_json(&operation)?),
            },
            image.png,
        )))
    }

    /// Writes `bytes` into the panel's project at `save.path`, as a project change of its own
    /// keyed by `save`'s request identity and the whole input (`payload`); `result` is the
    /// operation's confirmed result.
    async fn save_into(
        &self,
        caller: &PairingId,
        call: ToolCall,
        runtime: &BrowserRuntime,
        save: &lomi_protocol::tools::browser::CaptureSave,
        bytes: Vec<u8>,
        result: Value,
    ) -> Result<OperationView, ToolError> {
        let change = ProjectChange {
            call,
            workspace: &runtime.workspace_id,
            project: Some(&runtime.project_id),
            retry_epoch: &save.retry_epoch,
            request_key: &save.request_key,
            revision: None,
        };
        let path = save.path.clone();
        let overwrite = save.overwrite.unwrap_or(false);
        self.broker
            .change_project(caller, change, async { Ok(()) }, move |root, (), _| {
                write_into(root, path, bytes, overwrite, result)
            })
            .await
    }

    /// The workspace and project a panel's file-writing operation is keyed by: the retry
    /// epoch's workspace and the panel's project, known even after the panel closed (so a
    /// retry then answers its receipt). `None` when the panel is not of that workspace.
    fn anchor(
        &self,
        caller: &PairingId,
        panel: &PanelId,
        epoch: &lomi_protocol::RetryEpoch,
    ) -> Result<Option<(WorkspaceId, ProjectId)>, ToolError> {
        let workspace = self.broker.retry_epoch_workspace(caller, epoch)?;
        Ok(match self.broker.panel_anchor(panel) {
            Some((owner, Some(project))) if owner == workspace => Some((workspace, project)),
            _ => None,
        })
    }

    /// The operation by which an earlier request with this key saved into the panel's
    /// project, answered (settled); `None` when there is none.
    async fn saved_by(
        &self,
        caller: &PairingId,
        call: ToolCall,
        panel: &PanelId,
        (retry_epoch, request_key): (&lomi_protocol::RetryEpoch, &lomi_protocol::RequestKey),
    ) -> Result<Option<(lomi_protocol::OperationId, OperationView)>, ToolError> {
        let Some((workspace, project)) = self.anchor(caller, panel, retry_epoch)? else {
            return Ok(None);
        };
        let change = ProjectChange {
            call,
            workspace: &workspace,
            project: Some(&project),
            retry_epoch,
            request_key,
            revision: None,
        };
        let Some(prior) = self
            .broker
            .prior(caller, &change.mutation(project.clone()))?
        else {
            return Ok(None);
        };
        let operation = self.broker.answer(caller, &prior).await?;
        Ok(Some((prior, operation)))
    }

    /// `lomi_browser_pdf`: the active tab printed into a project file (an operation).
    pub async fn pdf(
        &self,
        caller: &PairingId,
        input: BrowserPdfInput,
    ) -> Result<OperationView, ToolError> {
        if !input.path.to_ascii_lowercase().ends_with(".pdf") {
            return Err(ToolError::invalid("path must end in .pdf"));
        }
        let (workspace, project) = self
            .anchor(caller, &input.panel_id, &input.retry_epoch)?
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "no browser panel {} in this retry epoch's workspace",
                    input.panel_id
                ))
            })?;
        let change = ProjectChange {
            call: ToolCall::of::<lomi_protocol::tools::browser::BrowserPdfTool>(&input)?,
            workspace: &workspace,
            project: Some(&project),
            retry_epoch: &input.retry_epoch,
            request_key: &input.request_key,
            revision: None,
        };
        let panels = self.clone();
        let panel = input.panel_id.clone();
        let path = input.path.clone();
        let overwrite = input.overwrite.unwrap_or(false);
        let landscape = input.landscape.unwrap_or(false);
        let background = input.print_background.unwrap_or(true);
        let find = async move {
            let (_, runtime) = panels.runtime(caller, &panel)?;
            runtime.browser.active_tab().map_err(tool_error)
        };
        self.broker
            .change_project(
                caller,
                change,
                find,
                move |root, tab, _context| async move {
                    let pdf = match tab.pdf(landscape, background).await {
                        Ok(pdf) => pdf,
                        Err(error) => {
                            return EffectOutcome::Failed {
                                effect: EffectState::None,
                                error: tool_error(error),
                            };
                        }
                    };
                    if pdf.len() > MAX_SAVED_FILE {
                        return EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: ToolError::invalid(format!(
                                "the PDF is {} bytes, over the 64 MiB Lomi writes",
                                pdf.len()
                            )),
                        };
                    }
                    let saved = PdfSaved {
                        path: path.clone(),
                        bytes: pdf.len() as u64,
                        sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&pdf)),
                        tab_id: tab.id.clone(),
                        url: tab.current_url(),
                    };
                    write_into(root, path, pdf, overwrite, saved).await
                },
            )
            .await
    }

    /// `lomi_browser_network_body`: a read of one logged response's body, cut to maxBytes;
    /// with `save`, the whole body is also written into the project (an operation).
    pub async fn network_body(
        &self,
        caller: &PairingId,
        input: BrowserNetworkBodyInput,
    ) -> Result<NetworkBody, ToolError> {
        let max = input.max_bytes.unwrap_or(DEFAULT_BODY_ANSWER);
        if max == 0 || max > MAX_BODY_ANSWER {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_BODY_ANSWER}; save writes a larger body into the project"
            )));
        }
        let cursor = lomi_protocol::parse_decimal(&input.cursor).ok_or_else(|| {
            ToolError::invalid(format!(
                "cursor {:?} is not a decimal cursor of lomi_browser_network",
                input.cursor
            ))
        })?;
        let runtime = match self.runtime(caller, &input.panel_id) {
            Ok((_, runtime)) => runtime,
            Err(error) => {
                return Err(self
                    .body_saved_before(caller, &input)
                    .await?
                    .unwrap_or(error));
            }
        };
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let (entry, request_id) = runtime.browser.logged_request(cursor).ok_or_else(|| {
            ToolError::not_found(format!(
                "the network log has no request {cursor} (never given out, or dropped from the newest 2,000)"
            ))
        })?;
        let tab = runtime.browser.tab(&entry.tab_id).ok_or_else(|| {
            ToolError::not_found(format!(
                "tab {} that made request {cursor} is closed; its bodies went with it",
                entry.tab_id
            ))
        })?;
        let (bytes, binary) = tab.response_body(&request_id).await.map_err(|error| match error {
            BrowserError::Cdp(why) => ToolError::not_found(format!(
                "Chromium has no body for request {cursor} ({why}): it is still loading, failed, was a redirect or had none, or was evicted since; load it again"
            )),
            other => tool_error(other),
        })?;
        let total = bytes.len();
        let keep = (max as usize).min(total);
        let (body, encoding, truncated) = if binary {
            (
                BASE64_STANDARD.encode(&bytes[..keep]),
                "base64",
                keep < total,
            )
        } else {
            // maxBytes as sent: escaped in the answer's JSON.
            let text = String::from_utf8_lossy(&bytes);
            let (kept, cut) = lomi_protocol::json_escaped_prefix(&text, max as usize);
            (kept.to_owned(), "utf8", cut)
        };
        let saved = match &input.save {
            Some(save) => {
                if total > MAX_SAVED_FILE {
                    return Err(ToolError::invalid(
                        "the body is over the 64 MiB Lomi writes",
                    ));
                }
                let done = BodySaved {
                    path: save.path.clone(),
                    bytes: total as u64,
                    sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)),
                };
                let call =
                    ToolCall::of::<lomi_protocol::tools::browser::BrowserNetworkBodyTool>(&input)?;
                let operation = self
                    .save_into(caller, call, &runtime, save, bytes, to_json(&done)?)
                    .await?;
                Some(to_json(&operation)?)
            }
            None => None,
        };
        Ok(NetworkBody {
            cursor: entry.cursor,
            tab_id: entry.tab_id,
            url: entry.url,
            status: entry.status,
            mime_type: entry.mime_type,
            encoding: encoding.to_owned(),
            body,
            bytes: total as u64,
            truncated,
            saved,
        })
    }

    /// For a retried body save whose browser is gone: the refusal that names the operation
    /// the first request made (the body cannot be read again; the saved file is in the
    /// project). `None` when there is no such operation.
    async fn body_saved_before(
        &self,
        caller: &PairingId,
        input: &BrowserNetworkBodyInput,
    ) -> Result<Option<ToolError>, ToolError> {
        let Some(save) = &input.save else {
            return Ok(None);
        };
        let Some((prior, operation)) = self
            .saved_by(
                caller,
                ToolCall::of::<lomi_protocol::tools::browser::BrowserNetworkBodyTool>(input)?,
                &input.panel_id,
                (&save.retry_epoch, &save.request_key),
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(
            ToolError::not_found(format!(
                "this request was answered before by operation {prior} ({}), which saved the body to {}; its browser is gone, so the body cannot be shown again: read the saved file, or the operation with lomi_operation_get",
                operation.state, save.path
            ))
            .with_details(json!({ "operation": to_json(&operation)? })),
        ))
    }
}

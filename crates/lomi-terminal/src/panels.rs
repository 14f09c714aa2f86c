//! Terminal panels: the terminal tools over the broker. Creation, interruption and closing are
//! operations through the broker's engine; input is ordered by lease and `inputSequence`;
//! reads answer at once or after a bounded wait.

use std::time::Duration;

use lomi_broker::Decider;
use lomi_broker::{
    Broker, Confirmation, EffectOutcome, InputFailure, LayoutChange, LeasedRequest, Opening,
    PanelCall, PanelRecord, PanelRuntime, Placed, Runtimes,
};
use lomi_files::confine::confined_existing_dir;
use lomi_protocol::definition::ToolCall;
use lomi_protocol::definition::{Preview, Subject};
use lomi_protocol::rules::Verdict;
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{PanelCloseInput, PanelKind};
use lomi_protocol::tools::terminal::{
    ExitView, InputAccepted, InputPayload, Interrupted, OutputView, ScreenView, TerminalClosed,
    TerminalCreateInput, TerminalCreated, TerminalInputInput, TerminalInterruptInput,
    TerminalReadInput, TerminalReadView, WaitArguments,
};
use lomi_protocol::{EffectState, ErrorCode, PairingId, PanelId, Tool, ToolError, WorkspaceId};

use crate::{ExitStatus, Terminal, TerminalConfig, TerminalError, WaitFor, WaitOutcome, key_bytes};

/// How long a new terminal may take to print its first output before creation fails.
const FIRST_OUTPUT: Duration = Duration::from_secs(10);
/// How long processes get to exit on close before they are killed.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
const DEFAULT_READ_BYTES: u32 = 16 * 1024;
/// Half a MiB: the answer (escaped, with the screen) must fit a client's message.
const MAX_READ_BYTES: u32 = 512 * 1024;
const DEFAULT_WAIT_MS: u32 = 10_000;
const MAX_WAIT_MS: u32 = 60_000;
const MAX_ARGV: usize = 256;
/// Longest time one input may wait for the program to read it.
const INPUT_WRITE_LIMIT: Duration = Duration::from_secs(10);
const MAX_ARG_BYTES: usize = 4096;

/// One live terminal runtime behind a panel.
#[derive(Clone)]
pub struct TerminalRuntime {
    pub terminal: Terminal,
    pub session_id: String,
    pub generation: String,
    pub workspace_id: WorkspaceId,
    /// The agents' typed line and held input (guarded terminal lines).
    pub guard: crate::guard::Guard,
}

impl PanelRuntime for TerminalRuntime {
    fn live_generation(&self, _panel: &PanelId) -> Result<String, ToolError> {
        Ok(self.generation.clone())
    }

    fn watch(&self, broker: &Broker, panel: &PanelId) {
        watch_progress(broker.clone(), panel.clone(), self.terminal.clone());
    }

    /// The process ran (it printed): stopped, it leaves the effect partial.
    async fn abandon(self) -> EffectState {
        self.terminal.close(CLOSE_GRACE).await;
        EffectState::Partial
    }
}

/// The terminal panels of one broker.
#[derive(Clone)]
pub struct TerminalPanels {
    broker: Broker,
    runtimes: Runtimes<TerminalRuntime>,
    /// `<data key>.<broker instance>/`: the start of the marker of every process this Lomi's
    /// terminals start (see [`crate::MARKER_VARIABLE`]).
    owner: String,
}

/// The part of a terminal marker that names the data dir: one Lomi runs on a data dir at a
/// time, so a marked process of this data dir that is not this instance's is a leftover.
fn data_key(broker: &Broker) -> String {
    use sha2::Digest;
    let dir = broker.data_dir();
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let digest = sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn exit_view(status: ExitStatus) -> ExitView {
    ExitView {
        code: status.code,
        signal: status.signal,
    }
}

impl TerminalPanels {
    /// The terminal panels of `broker`; ends what the terminals of an earlier Lomi on the same
    /// data dir left running.
    pub fn new(broker: Broker) -> Self {
        let key = data_key(&broker);
        let owner = format!("{key}.{}/", broker.instance_id());
        crate::session::end_leftovers(&key, &owner, CLOSE_GRACE);
        TerminalPanels {
            broker,
            runtimes: Runtimes::new(PanelKind::Terminal),
            owner,
        }
    }

    /// The runtime behind a panel the caller may see.
    fn runtime(
        &self,
        caller: &PairingId,
        panel: &PanelId,
    ) -> Result<(PanelRecord, TerminalRuntime), ToolError> {
        self.runtimes.find(&self.broker, caller, panel)
    }

    /// The runtime behind a panel, for the person (no grants involved).
    pub fn runtime_for_person(&self, panel: &PanelId) -> Option<TerminalRuntime> {
        self.runtimes.get(panel)
    }

    /// `lomi_terminal_create`.
    pub async fn create(
        &self,
        caller: &PairingId,
        input: TerminalCreateInput,
    ) -> Result<OperationView, ToolError> {
        lomi_broker::check_name("title", &input.title)?;
        let argv = input.argv.clone().unwrap_or_default();
        if argv.len() > MAX_ARGV
            || argv
                .iter()
                .any(|a| a.len() > MAX_ARG_BYTES || a.contains('\0'))
        {
            return Err(ToolError::invalid(format!(
                "argv takes at most {MAX_ARGV} arguments of at most {MAX_ARG_BYTES} bytes, without NUL"
            )));
        }
        if input.argv.as_ref().is_some_and(Vec::is_empty) {
            return Err(ToolError::invalid(
                "argv must name a program; omit it for the shell",
            ));
        }
        let project_id =
            self.broker
                .key_project(caller, &input.workspace_id, input.project_id.as_ref())?;
        let workspace_id = input.workspace_id.clone();
        let change = LayoutChange::of(
            ToolCall::of::<lomi_protocol::tools::terminal::TerminalCreateTool>(&input)?,
            &input,
            Some(project_id.clone()),
        )?;
        let owner = self.owner.clone();
        let anchor = project_id.clone();
        let creator = caller.clone();
        let title = input.title.clone();
        self.runtimes
            .open(
                &self.broker,
                caller,
                change,
                Confirmation::Policy,
                // The project's root only after the prior receipt: a retry is answered even if
                // the project left the workspace since.
                async {
                    let (_, root) = (self.broker).project_root(
                        caller,
                        &input.workspace_id,
                        Some(&anchor),
                    )?;
                    confined_existing_dir(&root, &input.cwd_relative)
                        .map_err(|why| ToolError::invalid(format!("cwdRelative: {why}")))
                },
                move |cwd, context| async move {
                    let mut config = TerminalConfig::new(cwd);
                    // The person's terminal settings, as they are at dispatch.
                    let defaults = context.broker.terminal_settings();
                    config.rows = defaults.rows;
                    config.cols = defaults.cols;
                    config.scrollback_lines = defaults.scrollback_lines as usize;
                    config.argv = if argv.is_empty() && !defaults.shell.is_empty() {
                        vec![defaults.shell, "-i".to_owned()]
                    } else {
                        argv
                    };
                    config.marker = Some(format!("{owner}{}", hex_id(&context.broker)));
                    if context.cancel.is_cancelled() {
                        return Err(EffectOutcome::Cancelled { effect: EffectState::None });
                    }
                    let terminal = match Terminal::spawn(config) {
                        Ok(terminal) => terminal,
                        Err(error) => {
                            return Err(EffectOutcome::Failed {
                                effect: EffectState::None,
                                error: ToolError::invalid(format!("the terminal did not start: {error}")),
                            });
                        }
                    };
                    // Cancelled before the process spoke: it is stopped, and nothing was added.
                    let Some(spoke) =
                        lomi_broker::unless_cancelled(&context.cancel, terminal.first_output(FIRST_OUTPUT)).await
                    else {
                        terminal.close(CLOSE_GRACE).await;
                        return Err(EffectOutcome::Cancelled { effect: EffectState::Partial });
                    };
                    if !spoke {
                        let status = terminal.close(CLOSE_GRACE).await;
                        return Err(EffectOutcome::Failed {
                            effect: EffectState::Partial,
                            error: ToolError::new(
                                ErrorCode::RuntimeUnavailable,
                                format!(
                                    "the program printed nothing within {} s and was stopped ({status:?}); \
                                     start one that writes to the terminal, or the shell",
                                    FIRST_OUTPUT.as_secs()
                                ),
                            ),
                        });
                    }
                    let generation = format!("g{}", hex_id(&context.broker));
                    let session_id = format!("ts_{}", hex_id(&context.broker));
                    let record = PanelRecord {
                        workspace_id: workspace_id.clone(),
                        kind: PanelKind::Terminal,
                        title,
                        project_id: Some(project_id),
                        generation: Some(generation.clone()),
                    };
                    let pid = terminal.pid();
                    let runtime = TerminalRuntime {
                        terminal,
                        session_id: session_id.clone(),
                        generation: generation.clone(),
                        workspace_id,
                        guard: crate::guard::Guard::default(),
                    };
                    let done = move |broker: &Broker, placed: Placed| {
                        let lease = broker.lease_acquire(&creator, &placed.panel_id, &generation)?;
                        Ok(TerminalCreated {
                            panel_id: placed.panel_id,
                            terminal_session_id: session_id,
                            generation,
                            lease_id: lease.lease_id,
                            domain_revision: placed.revision,
                            pid,
                        })
                    };
                    Ok((Opening::New(record, runtime), done))
                },
            )
            .await
    }

    /// `lomi_terminal_input`: ordered by lease and inputSequence.
    pub async fn input(
        &self,
        caller: &PairingId,
        input: TerminalInputInput,
    ) -> Result<InputAccepted, ToolError> {
        let (_record, runtime) = self.runtime(caller, &input.panel_id)?;
        let bytes: Vec<u8> = match &input.payload {
            InputPayload::Text(text) => text.as_bytes().to_vec(),
            InputPayload::Keys(keys) => {
                let mut bytes = Vec::new();
                for key in keys {
                    let sequence = key_bytes(key).ok_or_else(|| {
                        ToolError::invalid(format!(
                            "unknown key {key:?}; use Enter, Tab, Backspace, Escape, Up, Down, Left, Right, Home, End, \
                             PageUp, PageDown, Delete, F1..F12 or Ctrl-A..Ctrl-Z"
                        ))
                    })?;
                    bytes.extend_from_slice(sequence);
                }
                bytes
            }
        };
        // Text and keys that make the same bytes are the same input.
        let digest: String = {
            use sha2::Digest;
            sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let payload = serde_json::json!({ "bytesSha256": digest });
        let sequence = input.input_sequence;
        let leased = input.leased(payload.clone());
        let (mut accepted, duplicate): (InputAccepted, bool) = self
            .broker
            .lease_input(caller, leased, || async {
                // Under the lease's order: the guard reads lines in the order they are sent.
                let guard = &runtime.guard;
                if let Some(held) = guard.held() {
                    return Err(InputFailure::NotSent(ToolError::new(
                        ErrorCode::ResourceBusy,
                        format!(
                            "an earlier input of this terminal waits for the person's decision (operation {held}); \
                             nothing of inputSequence {sequence} was written. Follow {held} with lomi_operation_wait, \
                             then send this again"
                        ),
                    )));
                }
                self.broker
                    .check_paused(caller)
                    .map_err(InputFailure::NotSent)?;
                let (lines, typed) = guard.typed().after(&bytes);
                let mut holding = None;
                for line in &lines {
                    let subject = Subject::Command(line.text.clone());
                    let judged =
                        self.broker
                            .verdict(caller, &runtime.workspace_id, Tool::TerminalInput, &subject);
                    if let Decider::Rule(rule) = &judged.by {
                        self.broker.note_line_decided(rule);
                    }
                    let unreadable = line.edited
                        && judged.verdict == Verdict::Allow
                        && self.broker.guards_commands(caller, &runtime.workspace_id);
                    match judged.verdict {
                        Verdict::Deny => {
                            return Err(InputFailure::NotSent(
                                judged.denial(Tool::TerminalInput),
                            ));
                        }
                        Verdict::Ask if holding.is_none() => holding = Some((line, judged.by)),
                        Verdict::Allow if unreadable && holding.is_none() => {
                            holding = Some((line, Decider::Default));
                        }
                        _ => {}
                    }
                }
                if let Some((line, by)) = holding {
                    let held = self
                        .hold(caller, &runtime, &input, &bytes, payload, line, by, typed)
                        .await
                        .map_err(InputFailure::NotSent)?;
                    return Ok(InputAccepted {
                        input_sequence: sequence.to_string(),
                        duplicate: false,
                        bytes_written: 0,
                        output_cursor: runtime.terminal.output_cursor().to_string(),
                        held_operation: Some(held),
                    });
                }
                let accepted = write_input(&runtime.terminal, sequence, &bytes).await?;
                guard.written(typed);
                Ok(accepted)
            })
            .await?;
        accepted.duplicate = duplicate;
        Ok(accepted)
    }

    /// Holds an input for the person as an operation of `lomi_terminal_input` awaiting their
    /// decision; approved, it writes the input exactly once (while the agent still holds the
    /// lease on the same runtime), denied or cancelled, nothing. Answers the operation's id.
    #[allow(clippy::too_many_arguments)]
    async fn hold(
        &self,
        caller: &PairingId,
        runtime: &TerminalRuntime,
        input: &TerminalInputInput,
        bytes: &[u8],
        payload: serde_json::Value,
        line: &crate::guard::Line,
        by: Decider,
        typed: crate::guard::Typed,
    ) -> Result<lomi_protocol::OperationId, ToolError> {
        let workspace = runtime.workspace_id.clone();
        let epoch = self.broker.agent_epoch(caller, &workspace)?;
        let key = lomi_protocol::RequestKey::parse(format!(
            "rk_input_{}_{}",
            input.lease_id, input.input_sequence
        ))
        .map_err(ToolError::internal)?;
        let cwd = std::fs::read_link(format!("/proc/{}/cwd", runtime.terminal.pid()))
            .ok()
            .map(|path| path.display().to_string());
        let call = ToolCall {
            tool: Tool::TerminalInput,
            payload: serde_json::json!({
                "panelId": input.panel_id,
                "leaseId": input.lease_id,
                "inputSequence": input.input_sequence.to_string(),
                "input": payload,
                "line": line.text,
            }),
            preview: Preview::TerminalLine {
                line: line.text.clone(),
                cwd,
                edited: line.edited,
            },
            subject: Subject::Command(line.text.clone()),
            panel: Some(input.panel_id.clone()),
        };
        let mutation = lomi_broker::Mutation {
            call,
            retry_epoch: epoch,
            request_key: key,
            workspace_id: workspace,
            project_id: None,
            generation: Some(input.generation.clone()),
            revision: None,
            permit: lomi_broker::Permit::Panel(input.panel_id.clone()),
        };
        let guard = runtime.guard.clone();
        let terminal = runtime.terminal.clone();
        let (lease, panel, generation) = (
            input.lease_id.clone(),
            input.panel_id.clone(),
            input.generation.clone(),
        );
        let sequence = input.input_sequence;
        let bytes = bytes.to_vec();
        let owner = caller.clone();
        let view = self
            .broker
            .operate(
                caller,
                mutation,
                Confirmation::Hold(by),
                async { Ok(()) },
                move |broker: &Broker, (): &()| {
                    broker.lease_live(&owner, &lease, &panel, &generation)
                },
                move |(), context| async move {
                    let id = context.operation_id.clone();
                    match write_input(&terminal, sequence, &bytes).await {
                        Ok(accepted) => {
                            guard.release(&id, typed);
                            EffectOutcome::succeeded(&accepted)
                        }
                        Err(InputFailure::NotSent(error)) => {
                            guard.release(&id, crate::guard::Typed::default());
                            EffectOutcome::Failed {
                                effect: EffectState::None,
                                error,
                            }
                        }
                        Err(InputFailure::Unknown(error)) => {
                            guard.release(&id, crate::guard::Typed::default());
                            EffectOutcome::Unknown {
                                effect: EffectState::Unknown,
                                message: error.message,
                            }
                        }
                    }
                },
            )
            .await?;
        let id = view.operation_id.clone();
        if !view.state.is_settled() {
            runtime.guard.hold(id.clone());
            watch_held(self.broker.clone(), runtime.guard.clone(), id.clone());
        }
        Ok(id)
    }

    /// `lomi_terminal_read`.
    pub async fn read(
        &self,
        caller: &PairingId,
        input: TerminalReadInput,
    ) -> Result<TerminalReadView, ToolError> {
        let (_record, runtime) = self.runtime(caller, &input.panel_id)?;
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_READ_BYTES);
        if max_bytes == 0 || max_bytes > MAX_READ_BYTES {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_READ_BYTES}"
            )));
        }
        let since = match &input.since_cursor {
            Some(text) => Some(lomi_protocol::parse_decimal(text).ok_or_else(|| {
                ToolError::invalid(format!("sinceCursor {text:?} is not a decimal cursor"))
            })?),
            None => None,
        };
        let timeout_ms = input.timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_WAIT_MS {
            return Err(ToolError::invalid(format!(
                "timeoutMs must be 1 to {MAX_WAIT_MS}"
            )));
        }
        let terminal = &runtime.terminal;
        let waited = match &input.wait_for {
            Some(wait) => {
                let until = wait_for(wait)?;
                let from = since.unwrap_or_else(|| terminal.output_cursor());
                let outcome = terminal
                    .wait(until, from, Duration::from_millis(u64::from(timeout_ms)))
                    .await;
                Some(
                    match outcome {
                        WaitOutcome::Matched { .. } => "matched",
                        WaitOutcome::Idle => "idle",
                        WaitOutcome::Exited(_) => "exited",
                        WaitOutcome::TimedOut => "timed_out",
                    }
                    .to_owned(),
                )
            }
            None => None,
        };
        let screen = input.screen.unwrap_or(true).then(|| {
            let screen = terminal.screen();
            ScreenView {
                rows: screen.rows,
                cols: screen.cols,
                lines: screen.lines,
                cursor_row: screen.cursor_row,
                cursor_col: screen.cursor_col,
                alternate_screen: screen.alternate_screen,
                title: screen.title,
            }
        });
        let output = since.map(|cursor| {
            let output = terminal.output_since(cursor, max_bytes as usize);
            OutputView {
                start_cursor: output.start.to_string(),
                end_cursor: output.end.to_string(),
                text: String::from_utf8_lossy(&output.bytes).into_owned(),
                truncated_before: output.truncated_before,
                more: output.more,
            }
        });
        Ok(TerminalReadView {
            panel_id: input.panel_id,
            terminal_session_id: runtime.session_id.clone(),
            generation: runtime.generation.clone(),
            output_cursor: terminal.output_cursor().to_string(),
            screen,
            output,
            waited,
            exited: terminal.exit_status().map(exit_view),
        })
    }

    /// `lomi_terminal_interrupt`: SIGINT to the foreground process group. Confirms dispatch,
    /// not that anything exited.
    pub async fn interrupt(
        &self,
        caller: &PairingId,
        input: TerminalInterruptInput,
    ) -> Result<OperationView, ToolError> {
        let call = PanelCall {
            call: ToolCall::of::<lomi_protocol::tools::terminal::TerminalInterruptTool>(&input)?,
            retry_epoch: &input.retry_epoch,
            request_key: &input.request_key,
            panel_id: &input.panel_id,
            generation: &input.generation,
            lease: Some(&input.lease_id),
        };
        let panel_id = input.panel_id.clone();
        self.broker
            .operate_on_panel(
                caller,
                call,
                &self.runtimes,
                |_| Ok(()),
                |runtime, (), _context| async move {
                    match runtime.terminal.interrupt() {
                        Ok(sent) => EffectOutcome::succeeded(&Interrupted {
                            panel_id,
                            process_group: sent.process_group,
                            signal: "SIGINT".to_owned(),
                        }),
                        Err(error) => EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: ToolError::new(
                                ErrorCode::RuntimeUnavailable,
                                format!(
                                    "no interrupt was sent: {}",
                                    runtime.terminal.failure(error)
                                ),
                            ),
                        },
                    }
                },
            )
            .await
    }

    /// `lomi_terminal_close`: ends every process of the terminal and removes the panel.
    pub async fn close(
        &self,
        caller: &PairingId,
        input: PanelCloseInput,
    ) -> Result<OperationView, ToolError> {
        // The terminal has ended by then, whether or not the panel can be removed.
        let ending = |runtime: TerminalRuntime| async move {
            let status = runtime.terminal.close(CLOSE_GRACE).await;
            move |panel_id, revision| TerminalClosed {
                panel_id,
                exited: exit_view(status),
                domain_revision: revision,
            }
        };
        (self.runtimes)
            .close(
                &self.broker,
                caller,
                ToolCall::of::<lomi_protocol::tools::terminal::TerminalCloseTool>(&input)?,
                &input,
                EffectState::Partial,
                ending,
            )
            .await
    }

    /// The session ids of the running terminals: each terminal's process leads its own session.
    pub fn session_ids(&self) -> Vec<u32> {
        self.runtimes
            .lock()
            .values()
            .map(|r| r.terminal.pid())
            .collect()
    }

    /// Ends every terminal (the broker is stopping).
    pub async fn close_all(&self) {
        let closing: Vec<_> = self
            .runtimes
            .drain()
            .into_iter()
            .map(|runtime| tokio::spawn(async move { runtime.terminal.close(CLOSE_GRACE).await }))
            .collect();
        for close in closing {
            if let Err(error) = close.await {
                tracing::warn!("closing a terminal failed: {error}");
            }
        }
    }
}

/// How often a busy terminal's output progress is recorded as an event, at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Feeds a terminal's progress (output cursor, exit) into the broker's event feed: coalesced
/// to one event per `PROGRESS_EVERY` while output flows, and one at exit.
fn watch_progress(broker: Broker, panel: PanelId, terminal: Terminal) {
    let mut progress = terminal.progress();
    drop(terminal);
    tokio::spawn(async move {
        let mut recorded = 0;
        // The output seen before the panel existed (at least the first output) counts too.
        let mut now = *progress.borrow_and_update();
        loop {
            if let Some(status) = now.exited {
                broker.panel_progress(
                    &panel,
                    now.output_cursor,
                    Some((status.code, status.signal)),
                );
                return;
            }
            if now.output_cursor > recorded {
                recorded = now.output_cursor;
                broker.panel_progress(&panel, recorded, None);
                // Rate limit, not synchronisation: later output is picked up on the next change.
                tokio::time::sleep(PROGRESS_EVERY).await;
            }
            if progress.changed().await.is_err() {
                return;
            }
            now = *progress.borrow_and_update();
        }
    });
}

fn wait_for(wait: &WaitArguments) -> Result<WaitFor, ToolError> {
    let given = [
        wait.text.is_some(),
        wait.regex.is_some(),
        wait.idle_ms.is_some(),
        wait.exit == Some(true),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(ToolError::invalid(
            "waitFor takes exactly one of text, regex, idleMs or exit: true",
        ));
    }
    if let Some(text) = &wait.text {
        if text.is_empty() || text.len() > 4096 {
            return Err(ToolError::invalid(
                "waitFor.text must have 1 to 4,096 bytes",
            ));
        }
        return Ok(WaitFor::Text(text.clone()));
    }
    if let Some(pattern) = &wait.regex {
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| ToolError::invalid(format!("waitFor.regex: {e}")))?;
        return Ok(WaitFor::Regex(regex));
    }
    if let Some(idle) = wait.idle_ms {
        if !(50..=10_000).contains(&idle) {
            return Err(ToolError::invalid("waitFor.idleMs must be 50 to 10,000"));
        }
        return Ok(WaitFor::Idle(Duration::from_millis(u64::from(idle))));
    }
    Ok(WaitFor::Exit)
}

fn hex_id(broker: &Broker) -> String {
    broker
        .random_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes one input to the terminal, bounded by [`INPUT_WRITE_LIMIT`]: its acknowledgement,
/// or whether none or part of it reached the PTY.
async fn write_input(
    terminal: &Terminal,
    sequence: u64,
    bytes: &[u8],
) -> Result<InputAccepted, InputFailure> {
    let cursor = terminal.output_cursor();
    // A program that stops reading fills the PTY; do not hold the lease forever.
    match tokio::time::timeout(INPUT_WRITE_LIMIT, terminal.write(bytes)).await {
        Ok(Ok(())) => Ok(InputAccepted {
            input_sequence: sequence.to_string(),
            duplicate: false,
            bytes_written: bytes.len() as u64,
            output_cursor: cursor.to_string(),
            held_operation: None,
        }),
        Ok(Err(TerminalError::PartlyWritten { written, cause })) => {
            Err(InputFailure::Unknown(ToolError::new(
                ErrorCode::RuntimeUnavailable,
                format!(
                    "the terminal stopped taking inputSequence {sequence} after {written} of its {} \
                     bytes ({}); part of it may have been written, and it will not be sent \
                     again: read the terminal with lomi_terminal_read (it says whether and how \
                     its process exited)",
                    bytes.len(),
                    terminal.failure(*cause),
                ),
            )))
        }
        Ok(Err(error)) => Err(InputFailure::NotSent(ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!(
                "nothing of inputSequence {sequence} was written: {}",
                terminal.failure(error)
            ),
        ))),
        // Part of it may be in the PTY: the sequence is used, and a repeat is answered with
        // this, not written again.
        Err(_) => Err(InputFailure::Unknown(ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!(
                "the terminal did not take inputSequence {sequence} within {} s (the program \
                 is not reading its input); part of it may have been written, and it will not \
                 be sent again: read the terminal, then continue with the next inputSequence",
                INPUT_WRITE_LIMIT.as_secs()
            ),
        ))),
    }
}

/// Releases a terminal's held input once its operation settles without running (denied,
/// cancelled, or refused at dispatch): the line typed before it is dropped with it.
fn watch_held(broker: Broker, guard: crate::guard::Guard, id: lomi_protocol::OperationId) {
    tokio::spawn(async move {
        broker.wait_until_settled(&id).await;
        guard.release(&id, crate::guard::Typed::default());
    });
}

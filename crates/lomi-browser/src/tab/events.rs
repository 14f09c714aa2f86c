//! The tab's event pump: Chromium's events, in the order it sent them, kept in the tab's state
//! (worlds, navigations, lifecycle, dialogs, acknowledgements, requests in flight) and in the
//! browser's console and network logs.

use std::sync::{Arc, Mutex};

use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived,
};
use chromiumoxide::cdp::browser_protocol::page::{
    ClientNavigationDisposition, EventFrameNavigated, EventFrameRequestedNavigation,
    EventFrameStartedLoading, EventFrameStoppedLoading, EventJavascriptDialogClosed,
    EventJavascriptDialogOpening, EventLifecycleEvent, EventNavigatedWithinDocument,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EventBindingCalled, EventConsoleApiCalled, EventExceptionThrown, EventExecutionContextCreated,
    EventExecutionContextDestroyed, EventExecutionContextsCleared, RemoteObject,
};
use futures_util::StreamExt;
use lomi_protocol::tools::browser::DialogView;
use serde_json::Value;

use super::{Reached, Tab, WORLD, cdp_error};
use crate::BrowserError;
use crate::browser::Logs;

impl Tab {
    /// Subscribes to the events that keep this tab's state.
    pub(super) async fn pump(&self) -> Result<(), BrowserError> {
        macro_rules! listen {
            ($event:ty) => {
                self.page
                    .event_listener::<$event>()
                    .await
                    .map_err(|e| self.browser.failure(cdp_error(e)))?
            };
        }
        let mut created = listen!(EventExecutionContextCreated);
        let mut destroyed = listen!(EventExecutionContextDestroyed);
        let mut cleared = listen!(EventExecutionContextsCleared);
        let mut navigated = listen!(EventFrameNavigated);
        let mut lifecycle = listen!(EventLifecycleEvent);
        let mut within = listen!(EventNavigatedWithinDocument);
        let mut requested = listen!(EventFrameRequestedNavigation);
        let mut started = listen!(EventFrameStartedLoading);
        let mut stopped = listen!(EventFrameStoppedLoading);
        let mut binding = listen!(EventBindingCalled);
        let mut dialog_opening = listen!(EventJavascriptDialogOpening);
        let mut dialog_closed = listen!(EventJavascriptDialogClosed);
        let mut console = listen!(EventConsoleApiCalled);
        let mut exception = listen!(EventExceptionThrown);
        let mut request = listen!(EventRequestWillBeSent);
        let mut response = listen!(EventResponseReceived);
        let mut finished = listen!(EventLoadingFinished);
        let mut failed = listen!(EventLoadingFailed);
        let tab = self.clone();
        let logs = self.browser.logs();
        tokio::spawn(async move {
            loop {
                // Each event kind has its own channel, filled in the order Chromium sent the
                // events; polling them in a fixed order (a request before its response, its
                // finish or its failure) keeps that order where it matters. Unbiased, `select!`
                // could take a response first and find no request to attach it to.
                tokio::select! {
                    biased;
                    Some(e) = created.next() => {
                        if e.context.name == WORLD
                            && let Some(frame) = e.context.aux_data.as_ref().and_then(|a| a["frameId"].as_str())
                        {
                            tab.lock().worlds.insert(frame.to_owned(), (*e.context.id.inner(), e.context.unique_id.clone()));
                        }
                    }
                    Some(e) = destroyed.next() => {
                        tab.lock().worlds.retain(|_, (_, unique)| *unique != e.execution_context_unique_id);
                    }
                    Some(_) = cleared.next() => tab.lock().worlds.clear(),
                    Some(e) = navigated.next() => {
                        let mut state = tab.lock();
                        if e.frame.parent_id.is_none() {
                            state.loader = e.frame.loader_id.as_ref().to_owned();
                            // Chromium gives the fragment apart from the URL.
                            state.url = format!("{}{}", e.frame.url, e.frame.url_fragment.as_deref().unwrap_or_default());
                            let loader = state.loader.clone();
                            let reached = state.reached.entry(loader).or_insert(Reached::Commit);
                            *reached = (*reached).max(Reached::Commit);
                        }
                    }
                    Some(e) = lifecycle.next() => {
                        let reached = match e.name.as_str() {
                            "DOMContentLoaded" => Some(Reached::DomContentLoaded),
                            "load" => Some(Reached::Load),
                            "commit" => Some(Reached::Commit),
                            _ => None,
                        };
                        let mut state = tab.lock();
                        if let Some(reached) = reached && e.frame_id.as_ref() == state.main_frame {
                            let entry = state.reached.entry(e.loader_id.as_ref().to_owned()).or_insert(reached);
                            *entry = (*entry).max(reached);
                            if state.reached.len() > 64 {
                                let keep = state.loader.clone();
                                state.reached.retain(|k, _| *k == keep);
                            }
                        }
                    }
                    // Before the bindings, so a fence (see `navigation_since`) comes after them.
                    Some(e) = within.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.url = e.url.clone();
                            state.same_document += 1;
                        }
                    }
                    Some(e) = requested.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame
                            && e.disposition == ClientNavigationDisposition::CurrentTab
                        {
                            state.requested += 1;
                        }
                    }
                    Some(e) = started.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.started += 1;
                        }
                    }
                    Some(e) = stopped.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.stopped += 1;
                        }
                    }
                    Some(e) = binding.next() => {
                        tracing::debug!("tab {}: binding {} {}", tab.id, e.name, e.payload);
                        if e.name == "lomiAck"
                            && let Ok(ack) = serde_json::from_str::<Value>(&e.payload)
                            && let Some(token) = ack["token"].as_str()
                        {
                            let mut kind = ack["type"].as_str().unwrap_or_default().to_owned();
                            if let Some(hit) = ack["hit"].as_str() {
                                kind = format!("{kind} {hit}");
                            }
                            tab.lock().acks.insert(token.to_owned(), kind);
                        }
                    }
                    Some(e) = dialog_opening.next() => {
                        tracing::debug!("tab {}: a {} dialog opened", tab.id, e.r#type.as_ref());
                        tab.lock().dialog = Some(DialogView {
                            kind: e.r#type.as_ref().to_owned(),
                            message: e.message.chars().take(4096).collect(),
                            default_prompt: e.default_prompt.clone(),
                        });
                    }
                    Some(_) = dialog_closed.next() => tab.lock().dialog = None,
                    Some(e) = console.next() => {
                        let text = e.args.iter().map(remote_text).collect::<Vec<_>>().join(" ");
                        let url = e.stack_trace.as_ref().and_then(|s| s.call_frames.first()).map(|f| f.url.clone());
                        let level = match e.r#type.as_ref() {
                            "warning" => "warning",
                            "error" | "assert" => "error",
                            "debug" => "debug",
                            "info" => "info",
                            _ => "log",
                        };
                        lock_logs(&logs).console(&tab.id, level, text, url);
                    }
                    Some(e) = exception.next() => {
                        let details = &e.exception_details;
                        let text = details.exception.as_ref().and_then(|x| x.description.clone()).unwrap_or_else(|| details.text.clone());
                        lock_logs(&logs).console(&tab.id, "exception", text, details.url.clone());
                    }
                    Some(e) = request.next() => {
                        {
                            let mut state = tab.lock();
                            // A page that never ends its requests is not idle anyway; bounded.
                            if state.in_flight.len() < 10_000 {
                                state.in_flight.insert(e.request_id.as_ref().to_owned());
                            }
                        }
                        let kind = e.r#type.as_ref().map(|t| t.as_ref().to_owned()).unwrap_or_default();
                        lock_logs(&logs).request(&tab.id, e.request_id.as_ref(), &e.request.method, &e.request.url, &kind);
                    }
                    Some(e) = response.next() => {
                        let status = u16::try_from(e.response.status).ok();
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.status = status;
                            entry.mime_type = Some(e.response.mime_type.clone());
                        }
                        if e.r#type.as_ref() == "Document" && let Some(status) = status {
                            let mut state = tab.lock();
                            state.status.insert(e.loader_id.as_ref().to_owned(), (status, e.response.url.clone()));
                            if state.status.len() > 64 {
                                state.status.clear();
                            }
                        }
                    }
                    Some(e) = finished.next() => {
                        tab.lock().in_flight.remove(e.request_id.as_ref());
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.bytes = Some(e.encoded_data_length.max(0.0) as u64);
                        }
                    }
                    Some(e) = failed.next() => {
                        tab.lock().in_flight.remove(e.request_id.as_ref());
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.failed = Some(e.error_text.clone());
                        }
                    }
                    else => break,
                }
                tab.bump();
            }
            // The page is gone: wake anyone waiting so they see it.
            tab.bump();
        });
        Ok(())
    }
}

fn lock_logs(logs: &Arc<Mutex<Logs>>) -> std::sync::MutexGuard<'_, Logs> {
    logs.lock().unwrap_or_else(|e| e.into_inner())
}

fn remote_text(object: &RemoteObject) -> String {
    match &object.value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => object
            .description
            .clone()
            .or_else(|| {
                object
                    .unserializable_value
                    .as_ref()
                    .map(|u| u.inner().clone())
            })
            .unwrap_or_else(|| object.r#type.as_ref().to_owned()),
    }
}

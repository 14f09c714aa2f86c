//! What each agent did, for the person: its calls since this start (counted as they are
//! answered, with their times) and its operations from the receipts, which are durable and
//! say what decided each one.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use lomi_protocol::control::{ActivityView, AgentActivity, Counted, HourActivity, ToolActivity};
use lomi_protocol::{ErrorCode, PairingId, Timestamp, Tool, ToolError};

use crate::Broker;

/// Call times kept per agent and tool for the percentiles: the newest this many.
const TIMES_KEPT: usize = 1_000;
const HOUR_MS: i64 = 3_600_000;

/// One agent's calls since this start.
#[derive(Default)]
pub(crate) struct Calls {
    last_seen: Option<Timestamp>,
    tools: HashMap<Tool, ToolCalls>,
    errors: BTreeMap<&'static str, u64>,
    /// Calls per hour (the hour's start in ms), the last day's.
    hours: BTreeMap<i64, u64>,
}

#[derive(Default)]
struct ToolCalls {
    calls: u64,
    errors: u64,
    /// The newest call times, in ms, as a ring of at most [`TIMES_KEPT`].
    times: Vec<u64>,
    next: usize,
}

impl Broker {
    /// Counts one answered call of `pairing`'s: its tool, how long it took, and its error.
    pub fn note_call(
        &self,
        pairing: &PairingId,
        tool: Tool,
        took: Duration,
        error: Option<ErrorCode>,
    ) {
        let now = self.now();
        let mut calls = self.calls();
        let agent = calls.entry(pairing.clone()).or_default();
        agent.last_seen = Some(now);
        let hour = now.millis() - now.millis().rem_euclid(HOUR_MS);
        *agent.hours.entry(hour).or_default() += 1;
        agent.hours.retain(|start, _| *start > hour - 24 * HOUR_MS);
        let entry = agent.tools.entry(tool).or_default();
        entry.calls += 1;
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        if entry.times.len() < TIMES_KEPT {
            entry.times.push(ms);
        } else {
            entry.times[entry.next] = ms;
            entry.next = (entry.next + 1) % TIMES_KEPT;
        }
        if let Some(code) = error {
            entry.errors += 1;
            *agent.errors.entry(code.as_str()).or_default() += 1;
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<PairingId, Calls>> {
        self.inner.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every agent's activity (or one's): pairings the person knows, and any agent with
    /// receipts.
    pub fn agent_activity(&self, only: Option<&PairingId>) -> Result<ActivityView, ToolError> {
        let rows = self
            .inner
            .store
            .activity(only)
            .map_err(crate::store_error)?;
        let now = self.now();
        let this_hour = now.millis() - now.millis().rem_euclid(HOUR_MS);
        let names: BTreeMap<String, String> = self
            .domain()
            .pairings
            .iter()
            .map(|p| (p.id.as_str().to_owned(), p.client_name.clone()))
            .collect();
        let mut agents: BTreeMap<String, AgentActivity> = BTreeMap::new();
        let blank = |id: &str| -> Option<AgentActivity> {
            Some(AgentActivity {
                pairing_id: PairingId::parse(id).ok()?,
                client_name: names.get(id).cloned().unwrap_or_default(),
                last_seen: None,
                paused: false,
                calls: 0,
                operations: 0,
                operations_by_state: Vec::new(),
                denials: Vec::new(),
                errors_by_code: Vec::new(),
                decided_by: Vec::new(),
                tools: Vec::new(),
                hours: Vec::new(),
            })
        };
        for id in names.keys() {
            if only.is_none_or(|only| only.as_str() == id)
                && let Some(agent) = blank(id)
            {
                agents.insert(id.clone(), agent);
            }
        }
        // Tallies from the receipts, then from the calls.
        #[derive(Default)]
        struct Tally {
            states: BTreeMap<String, u64>,
            denials: BTreeMap<String, u64>,
            errors: BTreeMap<String, u64>,
            decided: BTreeMap<String, u64>,
            tools: BTreeMap<String, ToolActivity>,
            hours: BTreeMap<i64, (u64, u64)>,
            last: Option<Timestamp>,
        }
        let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
        for row in &rows {
            if !agents.contains_key(&row.pairing_id) {
                match blank(&row.pairing_id) {
                    Some(agent) => agents.insert(row.pairing_id.clone(), agent),
                    None => continue,
                };
            }
            let tally = tallies.entry(row.pairing_id.clone()).or_default();
            *tally.states.entry(row.state.clone()).or_default() += 1;
            if let Some(code) = &row.error_code {
                *tally.errors.entry(code.clone()).or_default() += 1;
                if code == ErrorCode::UserDenied.as_str() {
                    let by = row
                        .decided_by
                        .clone()
                        .unwrap_or_else(|| "unrecorded".into());
                    *tally.denials.entry(by).or_default() += 1;
                }
            }
            if let Some(by) = &row.decided_by {
                *tally.decided.entry(by.clone()).or_default() += 1;
            }
            tool_entry(&mut tally.tools, &row.tool).operations += 1;
            let hour = row.created_at.millis() - row.created_at.millis().rem_euclid(HOUR_MS);
            if hour > this_hour - 24 * HOUR_MS {
                tally.hours.entry(hour).or_default().1 += 1;
            }
            tally.last = tally.last.max(Some(row.created_at));
        }
        let calls = self.calls();
        for (id, agent) in &mut agents {
            let mut tally = tallies.remove(id).unwrap_or_default();
            agent.operations = tally.states.values().sum();
            let pairing = &agent.pairing_id;
            agent.paused = self.paused(pairing);
            if let Some(seen) = calls.get(pairing) {
                for (tool, used) in &seen.tools {
                    let entry = tool_entry(&mut tally.tools, tool.name());
                    entry.calls = used.calls;
                    entry.errors = used.errors;
                    let mut times = used.times.clone();
                    times.sort_unstable();
                    entry.p50_ms = percentile(&times, 50);
                    entry.p95_ms = percentile(&times, 95);
                }
                for (code, count) in &seen.errors {
                    *tally.errors.entry((*code).to_owned()).or_default() += count;
                }
                for (hour, count) in &seen.hours {
                    if *hour > this_hour - 24 * HOUR_MS {
                        tally.hours.entry(*hour).or_default().0 += count;
                    }
                }
                agent.calls = seen.tools.values().map(|t| t.calls).sum();
                tally.last = tally.last.max(seen.last_seen);
            }
            agent.last_seen = tally.last;
            agent.operations_by_state = counted(tally.states);
            agent.denials = counted(tally.denials);
            agent.errors_by_code = counted(tally.errors);
            agent.decided_by = counted(tally.decided);
            agent.tools = tally.tools.into_values().collect();
            agent.hours = tally
                .hours
                .into_iter()
                .map(|(start, (calls, operations))| HourActivity {
                    hour_start: Timestamp::from_millis(start),
                    calls,
                    operations,
                })
                .collect();
        }
        Ok(ActivityView {
            since: self.inner.started_at,
            agents: agents.into_values().collect(),
        })
    }
}

fn tool_entry<'t>(
    tools: &'t mut BTreeMap<String, ToolActivity>,
    tool: &str,
) -> &'t mut ToolActivity {
    tools
        .entry(tool.to_owned())
        .or_insert_with(|| ToolActivity {
            tool: tool.to_owned(),
            calls: 0,
            errors: 0,
            p50_ms: None,
            p95_ms: None,
            operations: 0,
        })
}

/// The nearest-rank percentile of sorted `times`.
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn counted(map: BTreeMap<String, u64>) -> Vec<Counted> {
    map.into_iter()
        .map(|(name, count)| Counted { name, count })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        let times: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&times, 50), Some(50));
        assert_eq!(percentile(&times, 95), Some(95));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}

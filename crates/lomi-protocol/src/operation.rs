//! Operation states and effect states, and the one table of legal transitions between them.

use serde::{Deserialize, Serialize};

/// Where an operation is in its life. The last four are settled and never change again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    /// Accepted and durably recorded; waiting for dispatch.
    Queued,
    /// Needs the native decision shown in Lomi.
    AwaitingUser,
    /// Work dispatched.
    Running,
    /// Cancellation requested; effects may already exist.
    Cancelling,
    /// The tool's specified postcondition was confirmed.
    Succeeded,
    /// Failed; inspect partial effects and the concrete failure.
    Failed,
    /// Settled after cancellation; this does not mean rollback.
    Cancelled,
    /// Lomi cannot establish the final effect. Inspect the actual resource.
    OutcomeUnknown,
}

/// What the effect of an operation reached, independent of its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    None,
    Partial,
    Complete,
    Unknown,
}

impl OperationState {
    pub const ALL: [OperationState; 8] = [
        OperationState::Queued,
        OperationState::AwaitingUser,
        OperationState::Running,
        OperationState::Cancelling,
        OperationState::Succeeded,
        OperationState::Failed,
        OperationState::Cancelled,
        OperationState::OutcomeUnknown,
    ];

    pub fn is_settled(self) -> bool {
        matches!(
            self,
            OperationState::Succeeded
                | OperationState::Failed
                | OperationState::Cancelled
                | OperationState::OutcomeUnknown
        )
    }

    /// True once the effect may have started: from here on a crash leaves the outcome unknown.
    pub fn is_dispatched(self) -> bool {
        matches!(self, OperationState::Running | OperationState::Cancelling)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OperationState::Queued => "queued",
            OperationState::AwaitingUser => "awaiting_user",
            OperationState::Running => "running",
            OperationState::Cancelling => "cancelling",
            OperationState::Succeeded => "succeeded",
            OperationState::Failed => "failed",
            OperationState::Cancelled => "cancelled",
            OperationState::OutcomeUnknown => "outcome_unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        OperationState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether `self → to` with effect `effect` is a legal step. Staying in `running` or
    /// `cancelling` with a new effect state records progress.
    ///
    /// Before dispatch (queued, awaiting_user) nothing has happened, so leaving without
    /// running settles with effect `none`. `succeeded` means the postcondition was
    /// confirmed, so its effect is `complete`. `outcome_unknown` carries `unknown` (or the
    /// `partial` that was already observed).
    pub fn can_become(self, to: OperationState, effect: EffectState) -> bool {
        use EffectState as E;
        use OperationState as S;
        let effect_fits = match to {
            S::Queued | S::AwaitingUser => effect == E::None,
            S::Running | S::Cancelling => effect != E::Unknown,
            S::Succeeded => effect == E::Complete,
            S::Failed | S::Cancelled => {
                if self.is_dispatched() {
                    effect != E::Unknown
                } else {
                    effect == E::None
                }
            }
            S::OutcomeUnknown => matches!(effect, E::Unknown | E::Partial),
        };
        let step_fits = match self {
            S::Queued => matches!(
                to,
                S::AwaitingUser | S::Running | S::Failed | S::Cancelled | S::OutcomeUnknown
            ),
            S::AwaitingUser => matches!(
                to,
                S::Queued | S::Running | S::Failed | S::Cancelled | S::OutcomeUnknown
            ),
            S::Running => matches!(
                to,
                S::Running | S::Cancelling | S::Succeeded | S::Failed | S::OutcomeUnknown
            ),
            S::Cancelling => matches!(
                to,
                S::Cancelling | S::Succeeded | S::Failed | S::Cancelled | S::OutcomeUnknown
            ),
            S::Succeeded | S::Failed | S::Cancelled | S::OutcomeUnknown => false,
        };
        effect_fits && step_fits
    }
}

impl EffectState {
    pub const ALL: [EffectState; 4] = [
        EffectState::None,
        EffectState::Partial,
        EffectState::Complete,
        EffectState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EffectState::None => "none",
            EffectState::Partial => "partial",
            EffectState::Complete => "complete",
            EffectState::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        EffectState::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for OperationState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for EffectState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EffectState as E;
    use OperationState as S;

    #[test]
    fn settled_states_are_final() {
        for from in S::ALL.into_iter().filter(|s| s.is_settled()) {
            for to in S::ALL {
                for effect in E::ALL {
                    assert!(!from.can_become(to, effect), "{from} -> {to} ({effect})");
                }
            }
        }
    }

    #[test]
    fn cancelling_before_dispatch_has_no_effect() {
        assert!(S::Queued.can_become(S::Cancelled, E::None));
        assert!(!S::Queued.can_become(S::Cancelled, E::Partial));
        assert!(S::AwaitingUser.can_become(S::Failed, E::None));
        assert!(S::Running.can_become(S::Cancelling, E::Partial));
        assert!(S::Cancelling.can_become(S::Cancelled, E::Partial));
        assert!(!S::Running.can_become(S::Cancelled, E::None));
        assert!(!S::Running.can_become(S::Succeeded, E::Partial));
        assert!(S::Running.can_become(S::OutcomeUnknown, E::Unknown));
        assert!(!S::Running.can_become(S::Queued, E::None));
    }

    #[test]
    fn names_round_trip() {
        for s in S::ALL {
            assert_eq!(S::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).expect("ser"), s.as_str());
        }
        for e in E::ALL {
            assert_eq!(E::parse(e.as_str()), Some(e));
            assert_eq!(serde_json::to_value(e).expect("ser"), e.as_str());
        }
    }
}

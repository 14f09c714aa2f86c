//! Pairings and grants: a new client is pending until the person approves it; grants name the
//! workspaces it may use; deny and revoke cut access at once.

use lomi_protocol::tools::session::{PairingState, PairingStatus};
use std::collections::BTreeSet;

use lomi_protocol::{ErrorCode, Family, PairingId, Timestamp, Tool, ToolError, WorkspaceId};
use serde::Serialize;

use crate::Broker;
use crate::commits::MemoryChange;
use crate::domain::{Credential, Domain, Pairing, check_name};
use crate::entropy::{bearer_token, secret_hash, verification_code};

use lomi_protocol::control::PairingCredential;
pub use lomi_protocol::control::PairingSummary;

/// At most this many pairings wait for the person's decision at once.
pub const MAX_PENDING_PAIRINGS: usize = 32;
/// A pairing the person has not decided within this long expires (its client reconnects to
/// ask again).
pub const PENDING_LIFETIME: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// A pairing the person created ahead, with its one-time bearer token.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedPairing {
    pub pairing_id: PairingId,
    pub token: String,
    pub grants: Vec<WorkspaceId>,
}

/// Where the person approves; shown in PAIRING_REQUIRED messages.
const WHERE_TO_APPROVE: &str =
    "Approve it in Lomi's window, or on the command line with `lomi pairing approve";

impl Broker {
    /// A new pending pairing for a client, bound to its transport session or to a secret.
    /// Pending pairings the person did not decide within [`PENDING_LIFETIME`] expire here;
    /// while [`MAX_PENDING_PAIRINGS`] are waiting, a new one is refused, so a flood of
    /// connections cannot bury the one the person expects.
    pub fn pairing_begin(
        &self,
        client_name: &str,
        secret: Option<&str>,
    ) -> Result<PairingId, ToolError> {
        let credential = match secret {
            Some(secret) => Credential::SecretHash(secret_hash(secret)),
            None => Credential::Session,
        };
        self.pairing_begin_with(client_name, credential, None)
    }

    /// A new pending pairing proven by `credential`.
    pub(crate) fn pairing_begin_with(
        &self,
        client_name: &str,
        credential: Credential,
        requested_families: Option<BTreeSet<Family>>,
    ) -> Result<PairingId, ToolError> {
        let name: String = client_name
            .chars()
            .filter(|c| !c.is_control())
            .take(120)
            .collect();
        let name = if name.trim().is_empty() {
            "unnamed client".to_owned()
        } else {
            name
        };
        let pairing = Pairing {
            id: PairingId::from_random(self.inner.entropy.bytes16()),
            client_name: name,
            verification_code: verification_code(self.inner.entropy.as_ref()),
            state: PairingState::Pending,
            credential,
            grants: Vec::new(),
            created_at: self.now(),
            decided_at: None,
            session_only: false,
            families: None,
            requested_families: requested_families.and_then(every_family_is_none),
        };
        let id = pairing.id.clone();
        let oldest = pairing
            .created_at
            .plus_millis(-i64::try_from(PENDING_LIFETIME.as_millis()).unwrap_or(i64::MAX));
        // A pending pairing is in memory until decided; a failed save only loses the pending
        // entry across a restart, where the client starts a new one anyway.
        let change = MemoryChange::Pending {
            pairing: Box::new(pairing),
            expired_before: oldest,
        };
        let room = |domain: &Domain| {
            let waiting = domain
                .pairings
                .iter()
                .filter(|p| p.state == PairingState::Pending && p.created_at >= oldest)
                .count();
            if waiting >= MAX_PENDING_PAIRINGS {
                return Err(ToolError::new(
                    ErrorCode::PairingRequired,
                    format!(
                        "{waiting} clients are already waiting for the person's approval, the most Lomi keeps; \
                         try again once the person has decided (waiting requests expire after {} minutes)",
                        PENDING_LIFETIME.as_secs() / 60
                    ),
                ));
            }
            Ok(())
        };
        self.change_in_memory(change, room, true)?;
        Ok(id)
    }

    /// Whether Lomi still knows the pairing (a pending one expires, a session one ends).
    pub fn pairing_known(&self, id: &PairingId) -> bool {
        self.domain().pairings.iter().any(|p| &p.id == id)
    }

    /// The pairing a secret (bearer token or keyring secret) belongs to, revoked or not. Every
    /// pairing's hash is compared, each in constant time, so how long a lookup takes says
    /// neither whether the secret exists, nor whether its pairing was revoked, nor how much of
    /// a stored one a guess got right.
    pub fn pairing_by_secret(&self, secret: &str) -> Option<PairingId> {
        use subtle::ConstantTimeEq;
        let hash = secret_hash(secret);
        if let Some(pairing) = self.pairing_by_access_token(&hash) {
            return Some(pairing);
        }
        let mut holder = None;
        for pairing in &self.domain().pairings {
            if let Credential::SecretHash(stored) = &pairing.credential
                && bool::from(stored.as_bytes().ct_eq(hash.as_bytes()))
                && holder.is_none()
            {
                holder = Some(pairing.id.clone());
            }
        }
        holder
    }

    /// Forgets a session-bound pairing whose transport session ended.
    pub fn pairing_session_ended(&self, id: &PairingId) {
        let ends = self
            .domain()
            .pairings
            .iter()
            .any(|p| &p.id == id && !p.is_durable());
        if ends {
            self.change_in_memory(MemoryChange::SessionEnded(id.clone()), |_| Ok(()), false)
                .unwrap_or_else(|never: ToolError| tracing::warn!("{never}"));
            self.activity().remove(id);
        }
    }

    /// What `lomi_pairing_status` answers.
    pub fn pairing_status(&self, id: &PairingId) -> Result<PairingStatus, ToolError> {
        let domain = self.domain();
        let pairing = domain
            .pairings
            .iter()
            .find(|p| &p.id == id)
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::PairingRequired,
                    "this session has no pairing; reconnect",
                )
            })?;
        let paused = domain.policy.pauses(id);
        let message = match pairing.state {
            PairingState::Pending => format!(
                "Waiting for the person to approve \"{}\" with code {}. {} {} --workspace WORKSPACE_ID`.",
                pairing.client_name, pairing.verification_code, WHERE_TO_APPROVE, pairing.id
            ),
            PairingState::Approved if paused => {
                "Approved, but the person paused agents' changes: reads work, changes answer PAUSED until they resume.".to_owned()
            }
            PairingState::Approved => {
                "Approved. Use lomi_workspace_list, then lomi_connect.".to_owned()
            }
            PairingState::Denied => "The person denied this pairing.".to_owned(),
            PairingState::Revoked => "The person revoked this pairing.".to_owned(),
        };
        Ok(PairingStatus {
            state: pairing.state,
            pairing_id: pairing.id.clone(),
            client_name: pairing.client_name.clone(),
            verification_code: pairing.verification_code.clone(),
            message,
            granted_workspaces: pairing.grants.clone(),
            paused,
        })
    }

    /// The approved pairing's grants, or the error every tool but pairing status answers.
    pub fn authorize(&self, id: &PairingId) -> Result<Vec<WorkspaceId>, ToolError> {
        let domain = self.domain();
        let Some(pairing) = domain.pairings.iter().find(|p| &p.id == id) else {
            return Err(ToolError::new(
                ErrorCode::PairingRequired,
                "this session has no pairing; reconnect",
            ));
        };
        match pairing.state {
            PairingState::Approved => {
                let grants = pairing.grants.clone();
                drop(domain);
                self.activity().insert(id.clone(), self.now());
                self.note_change(crate::Area::Activity);
                Ok(grants)
            }
            PairingState::Pending => Err(ToolError::new(
                ErrorCode::PairingRequired,
                format!(
                    "Lomi has not approved this client yet. The person must approve \"{}\" (code {}). {} {} --workspace WORKSPACE_ID`.",
                    pairing.client_name, pairing.verification_code, WHERE_TO_APPROVE, pairing.id
                ),
            )
            .with_details(serde_json::json!({
                "pairingId": pairing.id,
                "verificationCode": pairing.verification_code,
            }))),
            PairingState::Denied => Err(ToolError::new(
                ErrorCode::PairingDenied,
                "the person denied this pairing; do not retry",
            )),
            PairingState::Revoked => Err(ToolError::new(
                ErrorCode::PairingRevoked,
                "the person revoked this pairing; ask them to pair again",
            )),
        }
    }

    pub fn pairing_list(&self) -> Vec<PairingSummary> {
        let activity = self.activity().clone();
        let redirects = self.oauth_redirects();
        let domain = self.domain();
        domain
            .pairings
            .iter()
            .map(|p| PairingSummary {
                sign_in: match &p.credential {
                    Credential::OAuth(grant) => crate::oauth::sign_in_client(
                        &domain.oauth_clients,
                        &grant.client_id,
                        redirects.get(&p.id).map(String::as_str),
                    ),
                    _ => None,
                },
                pairing_id: p.id.clone(),
                client_name: p.client_name.clone(),
                verification_code: p.verification_code.clone(),
                state: p.state,
                grants: p.grants.clone(),
                credential: match (&p.credential, p.is_durable()) {
                    (Credential::OAuth(_), true) => PairingCredential::Oauth,
                    (_, true) => PairingCredential::Token,
                    (_, false) => PairingCredential::Session,
                },
                created_at: p.created_at,
                decided_at: p.decided_at,
                last_active_at: activity.get(&p.id).copied(),
                families: p.families.clone(),
                requested_families: p.requested_families.clone(),
            })
            .collect()
    }

    fn activity(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<PairingId, Timestamp>> {
        self.inner
            .activity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Approves a pending pairing with explicit grants (none is allowed: it then sees nothing).
    pub fn pairing_approve(&self, id: &PairingId, grants: &[WorkspaceId]) -> Result<(), ToolError> {
        self.pairing_approve_families(id, grants, false, None)
    }

    /// Changes which tool families an approved or pending pairing sees (`None`: every family);
    /// its open sessions are told their tool list changed.
    pub fn pairing_set_families(
        &self,
        id: &PairingId,
        families: Option<BTreeSet<Family>>,
    ) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            let pairing = find_pairing(domain, id)?;
            if matches!(pairing.state, PairingState::Denied | PairingState::Revoked) {
                return Err(ToolError::invalid(format!(
                    "pairing {id} is {}; it sees no tools",
                    state_name(pairing.state)
                )));
            }
            pairing.families = families.and_then(every_family_is_none);
            Ok(())
        })?;
        self.inner.families_changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// The tool families the pairing sees once approved (`None`: every family); `tools/list`
    /// shows an unapproved pairing no tools at all (`pairing_approved`).
    pub fn pairing_families(&self, id: &PairingId) -> Option<BTreeSet<Family>> {
        self.domain()
            .pairings
            .iter()
            .find(|p| &p.id == id)
            .and_then(|p| p.families.clone())
    }

    /// Whether the pairing sees `tool` in its tool list (and may call it).
    pub fn pairing_sees(&self, id: &PairingId, tool: Tool) -> bool {
        lomi_protocol::catalog::sees(self.pairing_families(id).as_ref(), tool)
    }

    /// A receiver that wakes each time any pairing's families change.
    pub fn families_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.families_changed.subscribe()
    }

    /// Approves a pending pairing for its current session only: it ends when that connection
    /// ends (an HTTP client's MCP session, or the stdio bridge's stream), and a relaunched
    /// client is pending again.
    pub fn pairing_approve_for_session(
        &self,
        id: &PairingId,
        grants: &[WorkspaceId],
    ) -> Result<(), ToolError> {
        self.pairing_approve_families(id, grants, true, None)
    }

    /// Approves a pending pairing, for good or for its session, seeing only `families` of tools
    /// (`None`: what its client asked for, or every family if it did not say).
    pub fn pairing_approve_families(
        &self,
        id: &PairingId,
        grants: &[WorkspaceId],
        session_only: bool,
        families: Option<BTreeSet<Family>>,
    ) -> Result<(), ToolError> {
        let now = self.now();
        let families = families.and_then(every_family_is_none);
        self.update_domain(|domain| {
            check_grants(domain, grants)?;
            let pairing = find_pairing(domain, id)?;
            if pairing.state != PairingState::Pending {
                return Err(ToolError::invalid(format!(
                    "pairing {id} is {}, only a pending pairing can be approved",
                    state_name(pairing.state)
                )));
            }
            pairing.state = PairingState::Approved;
            pairing.grants = grants.to_vec();
            pairing.decided_at = Some(now);
            pairing.session_only = session_only;
            pairing.families = families.or_else(|| pairing.requested_families.clone());
            Ok(())
        })?;
        // Its sessions listed no tools before: they are told the list changed.
        self.inner.families_changed.send_modify(|n| *n += 1);
        Ok(())
    }

    pub fn pairing_deny(&self, id: &PairingId) -> Result<(), ToolError> {
        let now = self.now();
        self.update_domain(|domain| {
            let pairing = find_pairing(domain, id)?;
            if pairing.state != PairingState::Pending {
                return Err(ToolError::invalid(format!(
                    "pairing {id} is {}, only a pending pairing can be denied (revoke an approved one)",
                    state_name(pairing.state)
                )));
            }
            pairing.state = PairingState::Denied;
            pairing.decided_at = Some(now);
            Ok(())
        })
    }

    /// Whether the pairing is approved: only then does `tools/list` show it tools.
    pub fn pairing_approved(&self, id: &PairingId) -> bool {
        self.domain()
            .pairings
            .iter()
            .any(|p| &p.id == id && p.state == PairingState::Approved)
    }

    /// Revokes an approved pairing: every later call of it is refused, and its token dies.
    pub fn pairing_revoke(&self, id: &PairingId) -> Result<(), ToolError> {
        let now = self.now();
        self.update_domain(|domain| {
            let pairing = find_pairing(domain, id)?;
            if pairing.state != PairingState::Approved {
                return Err(ToolError::invalid(format!(
                    "pairing {id} is {}, only an approved pairing can be revoked",
                    state_name(pairing.state)
                )));
            }
            pairing.state = PairingState::Revoked;
            pairing.grants.clear();
            // Its refresh token dies; its access tokens still name it, so its client's next
            // call is told the person revoked it (PAIRING_REVOKED), not asked to sign in again.
            if let Credential::OAuth(grant) = &mut pairing.credential {
                grant.refresh_hash = None;
            }
            pairing.decided_at = Some(now);
            Ok(())
        })?;
        // Its open sessions are told their tool list changed (it is empty now).
        self.inner.families_changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Creates an approved pairing ahead of time, with a bearer token shown once.
    pub fn pairing_create(
        &self,
        client_name: &str,
        grants: &[WorkspaceId],
        families: Option<BTreeSet<Family>>,
    ) -> Result<CreatedPairing, ToolError> {
        check_name("the client name", client_name).map_err(ToolError::invalid)?;
        let token = bearer_token(self.inner.entropy.as_ref());
        let now = self.now();
        let pairing = Pairing {
            id: PairingId::from_random(self.inner.entropy.bytes16()),
            client_name: client_name.to_owned(),
            verification_code: verification_code(self.inner.entropy.as_ref()),
            state: PairingState::Approved,
            credential: Credential::SecretHash(secret_hash(&token)),
            grants: grants.to_vec(),
            created_at: now,
            decided_at: Some(now),
            session_only: false,
            families: families.and_then(every_family_is_none),
            requested_families: None,
        };
        let id = pairing.id.clone();
        self.update_domain(|domain| {
            check_grants(domain, grants)?;
            domain.pairings.push(pairing);
            Ok(())
        })?;
        Ok(CreatedPairing {
            pairing_id: id,
            token,
            grants: grants.to_vec(),
        })
    }
}

/// A choice of every family is "every family", which also covers families a later Lomi adds.
fn every_family_is_none(families: BTreeSet<Family>) -> Option<BTreeSet<Family>> {
    (families.len() < Family::ALL.len()).then_some(families)
}

fn find_pairing<'a>(domain: &'a mut Domain, id: &PairingId) -> Result<&'a mut Pairing, ToolError> {
    domain
        .pairings
        .iter_mut()
        .find(|p| &p.id == id)
        .ok_or_else(|| ToolError::not_found(format!("no pairing {id}; see `lomi pairing list`")))
}

fn check_grants(domain: &Domain, grants: &[WorkspaceId]) -> Result<(), ToolError> {
    for id in grants {
        if !domain.workspaces.iter().any(|w| &w.id == id) {
            return Err(ToolError::not_found(format!(
                "no workspace {id}; see `lomi workspace list`"
            )));
        }
    }
    Ok(())
}

fn state_name(state: PairingState) -> &'static str {
    match state {
        PairingState::Pending => "pending",
        PairingState::Approved => "approved",
        PairingState::Denied => "denied",
        PairingState::Revoked => "revoked",
    }
}

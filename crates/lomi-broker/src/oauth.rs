//! Lomi as its own OAuth 2.1 authorization server on loopback (the MCP authorization flow):
//! registered clients, authorization requests that become pending pairings the person approves
//! in Lomi, single-use codes bound to a PKCE challenge, short-lived access tokens and rotated
//! refresh tokens. Every secret is kept as its SHA-256 only. The HTTP side (metadata, pages,
//! form decoding) is in `lomi-mcp`; the rules are here, beside the pairings they end in.

use std::collections::HashMap;

use lomi_protocol::tools::session::PairingState;
use lomi_protocol::{PairingId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::Broker;
use crate::domain::Credential;
use crate::entropy::{secret_hash, verification_code};

/// How long an access token is valid.
pub const ACCESS_TOKEN_LIFETIME: std::time::Duration = std::time::Duration::from_secs(60 * 60);
/// How long a refresh token is valid if unused (each use rotates it and starts again).
pub const REFRESH_TOKEN_LIFETIME: std::time::Duration =
    std::time::Duration::from_secs(90 * 24 * 60 * 60);
/// How long an authorization code may wait for its token request.
pub const CODE_LIFETIME: std::time::Duration = std::time::Duration::from_secs(5 * 60);
/// At most this many registered clients are kept; the oldest that never paired goes first.
pub const MAX_CLIENTS: usize = 256;
/// Redirect URIs one client may register.
const MAX_REDIRECT_URIS: usize = 8;
/// Earlier refresh tokens of a grant remembered to detect a stolen one being replayed.
const RETIRED_REFRESH_KEPT: usize = 8;

/// A client that registered itself (RFC 7591). Public clients only: no client secret; PKCE
/// proves that the token request comes from whoever started the authorization.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthClient {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub created_at: Timestamp,
    /// Its `client_id` is the https URL of a client ID metadata document Lomi fetched (its
    /// name and redirect URIs are the document's, as last fetched); false: it registered
    /// itself with Lomi (RFC 7591).
    #[serde(default)]
    pub metadata_document: bool,
}

/// The refresh side of an approved OAuth pairing, kept in `domain.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthGrant {
    pub client_id: String,
    /// SHA-256 of the current refresh token (none until the first code is exchanged).
    pub refresh_hash: Option<String>,
    pub refresh_expires_at: Option<Timestamp>,
    /// Hashes of rotated-out refresh tokens: presenting one revokes the pairing (RFC 9700
    /// §4.14.2: a replayed refresh token means one of the two holders is not the client).
    #[serde(default)]
    pub retired: Vec<String>,
    /// The live access tokens' hashes (kept across restarts, so a client's token stays good
    /// until it expires: a client answered 401 would ask the person again, not refresh).
    #[serde(default)]
    pub access: Vec<AccessHash>,
}

/// One access token, as its SHA-256 and expiry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessHash {
    pub hash: String,
    pub expires_at: Timestamp,
}

/// Access tokens kept per grant (older ones are dropped; a client uses its newest).
const ACCESS_KEPT: usize = 4;

/// How long an access token is valid: [`ACCESS_TOKEN_LIFETIME`], or
/// `LOMI_OAUTH_ACCESS_SECONDS` (for tests, which cannot wait an hour for a refresh).
fn access_lifetime() -> std::time::Duration {
    std::env::var("LOMI_OAUTH_ACCESS_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(ACCESS_TOKEN_LIFETIME, |s| {
            std::time::Duration::from_secs(s.max(1))
        })
}

/// An OAuth error as the token and registration endpoints answer it (RFC 6749 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            error,
            description: description.into(),
        }
    }
}

/// What `/authorize` asked for, validated by the HTTP side (redirect URI among the client's,
/// S256 challenge, resource this endpoint's).
#[derive(Clone, Debug)]
pub struct AuthorizeRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub state: Option<String>,
    pub resource: String,
    /// The tool families its `scope` asked for (`lomi:browser` …); `None`: it named none.
    pub families: Option<std::collections::BTreeSet<lomi_protocol::Family>>,
}

/// A started authorization: the pending pairing the person decides.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizeStarted {
    pub request_id: String,
    pub pairing_id: PairingId,
    pub client_name: String,
    pub verification_code: String,
}

/// Where an authorization stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorizeOutcome {
    Pending,
    /// Approved: send the browser to `redirect_uri` with this code and state.
    Approved {
        redirect_uri: String,
        code: String,
        state: Option<String>,
    },
    /// Denied (or revoked before the code was used).
    Denied {
        redirect_uri: String,
        state: Option<String>,
    },
    /// Unknown, or the person did not decide in time.
    Expired,
}

/// Tokens handed out at `/token`.
#[derive(Clone, Debug, Serialize)]
pub struct TokenSet {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    /// The tool families granted, as scopes (`lomi:browser lomi:files`).
    pub scope: String,
}

/// In-memory authorization state: requests waiting for the person and codes waiting for their
/// token request (lost on restart: the client starts again).
#[derive(Default)]
pub(crate) struct OAuthState {
    requests: HashMap<String, Pending>,
    codes: HashMap<String, IssuedCode>,
}

struct Pending {
    request: AuthorizeRequest,
    pairing: PairingId,
    created: Timestamp,
    /// The code already minted for it (a reloaded page gets the same redirect).
    code: Option<String>,
}

struct IssuedCode {
    request: AuthorizeRequest,
    pairing: PairingId,
    expires: Timestamp,
}

fn millis(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn random_token(broker: &Broker, prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    broker.inner.entropy.fill(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// What the person is shown of an OAuth client: where its sign-in sends the browser back
/// (`redirect_uri`, the one its authorization asked for, else the first it listed) and where
/// its metadata came from.
pub(crate) fn sign_in_client(
    clients: &[OAuthClient],
    client_id: &str,
    redirect_uri: Option<&str>,
) -> Option<lomi_protocol::control::SignInClient> {
    let client = clients.iter().find(|c| c.client_id == client_id)?;
    let redirect = redirect_uri.or(client.redirect_uris.first().map(String::as_str))?;
    let redirect_host = url::Url::parse(redirect)
        .ok()?
        .host_str()
        .map(str::to_owned)?;
    Some(lomi_protocol::control::SignInClient {
        redirect_host,
        metadata_url: client.metadata_document.then(|| client.client_id.clone()),
    })
}

impl Broker {
    /// The redirect URI each waiting authorization asked for, by its pending pairing.
    pub(crate) fn oauth_redirects(&self) -> HashMap<PairingId, String> {
        self.oauth()
            .requests
            .values()
            .map(|p| (p.pairing.clone(), p.request.redirect_uri.clone()))
            .collect()
    }

    fn oauth(&self) -> std::sync::MutexGuard<'_, OAuthState> {
        self.inner.oauth.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a client (RFC 7591). Redirect URIs must be absolute `http` URIs on a loopback
    /// host or `https` URIs, without fragments.
    pub fn oauth_register(
        &self,
        client_name: &str,
        redirect_uris: &[String],
    ) -> Result<OAuthClient, OAuthError> {
        check_redirect_uris(redirect_uris, "register")?;
        let client = OAuthClient {
            client_id: random_token(self, "lomi_client_")[..44].to_owned(),
            client_name: shown_name(client_name, "unnamed client"),
            redirect_uris: redirect_uris.to_vec(),
            created_at: self.now(),
            metadata_document: false,
        };
        self.keep_client(client)
    }

    /// A client identified by its client ID metadata document (fetched and checked by the
    /// HTTP side, `lomi-mcp`'s cimd.rs): kept, or updated to the document as fetched now, so
    /// `/token` knows it by its URL like a registered one.
    pub fn oauth_client_from_document(
        &self,
        client_id: &str,
        client_name: &str,
        redirect_uris: &[String],
    ) -> Result<OAuthClient, OAuthError> {
        check_redirect_uris(redirect_uris, "the document must list")?;
        let host = url::Url::parse(client_id)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        self.keep_client(OAuthClient {
            client_id: client_id.to_owned(),
            client_name: shown_name(client_name, &host),
            redirect_uris: redirect_uris.to_vec(),
            created_at: self.now(),
            metadata_document: true,
        })
    }

    /// Adds `client` (or replaces the one with its id), making room at [`MAX_CLIENTS`] by the
    /// oldest client no pairing uses.
    fn keep_client(&self, client: OAuthClient) -> Result<OAuthClient, OAuthError> {
        let added = client.clone();
        self.update_domain(|domain| {
            if let Some(known) = domain
                .oauth_clients
                .iter_mut()
                .find(|c| c.client_id == added.client_id)
            {
                *known = OAuthClient {
                    created_at: known.created_at,
                    ..added
                };
                return Ok(());
            }
            if domain.oauth_clients.len() >= MAX_CLIENTS {
                // The oldest registration no pairing uses makes room; a flood of registrations
                // cannot push out a client the person approved.
                let used: std::collections::HashSet<String> = domain
                    .pairings
                    .iter()
                    .filter_map(|p| match &p.credential {
                        Credential::OAuth(grant) => Some(grant.client_id.clone()),
                        _ => None,
                    })
                    .collect();
                match domain
                    .oauth_clients
                    .iter()
                    .position(|c| !used.contains(&c.client_id))
                {
                    Some(oldest) => {
                        domain.oauth_clients.remove(oldest);
                    }
                    None => {
                        return Err(lomi_protocol::ToolError::new(
                            lomi_protocol::ErrorCode::ResourceExhausted,
                            "every registered client is paired",
                        ));
                    }
                }
            }
            domain.oauth_clients.push(added);
            Ok(())
        })
        .map_err(|e| OAuthError::new("temporarily_unavailable", e.message))?;
        Ok(client)
    }

    /// The registered client, if any.
    pub fn oauth_client(&self, client_id: &str) -> Option<OAuthClient> {
        self.domain()
            .oauth_clients
            .iter()
            .find(|c| c.client_id == client_id)
            .cloned()
    }

    /// Starts an authorization: a pending pairing the person approves in Lomi (the window's
    /// dialog or `lomi pairing approve`), named after the client.
    pub fn oauth_authorize(
        &self,
        request: AuthorizeRequest,
    ) -> Result<AuthorizeStarted, OAuthError> {
        let client = self.oauth_client(&request.client_id).ok_or_else(|| {
            OAuthError::new("invalid_client", "unknown client_id; register first")
        })?;
        let pairing = self
            .pairing_begin_with(
                &client.client_name,
                Credential::OAuth(OAuthGrant {
                    client_id: client.client_id.clone(),
                    refresh_hash: None,
                    refresh_expires_at: None,
                    retired: Vec::new(),
                    access: Vec::new(),
                }),
                request.families.clone(),
            )
            .map_err(|e| OAuthError::new("temporarily_unavailable", e.message))?;
        let request_id = random_token(self, "")[..32].to_owned();
        let now = self.now();
        let code = self
            .domain()
            .pairings
            .iter()
            .find(|p| p.id == pairing)
            .map(|p| p.verification_code.clone())
            .unwrap_or_else(|| verification_code(self.inner.entropy.as_ref()));
        let mut state = self.oauth();
        let oldest = now.plus_millis(-millis(crate::pairings::PENDING_LIFETIME));
        state.requests.retain(|_, p| p.created >= oldest);
        state.requests.insert(
            request_id.clone(),
            Pending {
                request,
                pairing: pairing.clone(),
                created: now,
                code: None,
            },
        );
        Ok(AuthorizeStarted {
            request_id,
            pairing_id: pairing,
            client_name: client.client_name,
            verification_code: code,
        })
    }

    /// Where an authorization stands; once approved, mints its single-use code.
    pub fn oauth_authorize_outcome(&self, request_id: &str) -> AuthorizeOutcome {
        let now = self.now();
        let pairing_state = {
            let state = self.oauth();
            let Some(pending) = state.requests.get(request_id) else {
                return AuthorizeOutcome::Expired;
            };
            let pairing = pending.pairing.clone();
            drop(state);
            self.domain()
                .pairings
                .iter()
                .find(|p| p.id == pairing)
                .map(|p| p.state)
        };
        let mut state = self.oauth();
        let Some(pending) = state.requests.get_mut(request_id) else {
            return AuthorizeOutcome::Expired;
        };
        let redirect_uri = pending.request.redirect_uri.clone();
        let client_state = pending.request.state.clone();
        match pairing_state {
            Some(PairingState::Pending) => AuthorizeOutcome::Pending,
            Some(PairingState::Approved) => {
                let code = match &pending.code {
                    Some(code) => code.clone(),
                    None => {
                        let code = random_token(self, "lomi_code_");
                        pending.code = Some(code.clone());
                        let issued = IssuedCode {
                            request: pending.request.clone(),
                            pairing: pending.pairing.clone(),
                            expires: now.plus_millis(millis(CODE_LIFETIME)),
                        };
                        state.codes.retain(|_, c| c.expires > now);
                        state.codes.insert(secret_hash(&code), issued);
                        code
                    }
                };
                AuthorizeOutcome::Approved {
                    redirect_uri,
                    code,
                    state: client_state,
                }
            }
            Some(PairingState::Denied | PairingState::Revoked) => AuthorizeOutcome::Denied {
                redirect_uri,
                state: client_state,
            },
            None => AuthorizeOutcome::Expired,
        }
    }

    /// Exchanges an authorization code (RFC 6749 §4.1.3 with PKCE S256, RFC 7636): the code is
    /// used up whatever the answer, so a second attempt with it fails.
    pub fn oauth_exchange_code(
        &self,
        client_id: &str,
        code: &str,
        redirect_uri: &str,
        code_verifier: &str,
        resource: Option<&str>,
    ) -> Result<TokenSet, OAuthError> {
        let now = self.now();
        let issued = self
            .oauth()
            .codes
            .remove(&secret_hash(code))
            .filter(|c| c.expires > now)
            .ok_or_else(|| {
                OAuthError::new(
                    "invalid_grant",
                    "the authorization code is unknown, used or expired",
                )
            })?;
        if issued.request.client_id != client_id {
            return Err(OAuthError::new(
                "invalid_grant",
                "the code was issued to another client",
            ));
        }
        if issued.request.redirect_uri != redirect_uri {
            return Err(OAuthError::new(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        if let Some(resource) = resource
            && resource != issued.request.resource
        {
            return Err(OAuthError::new(
                "invalid_target",
                "resource differs from the authorization request's",
            ));
        }
        if !pkce_matches(code_verifier, &issued.request.code_challenge) {
            return Err(OAuthError::new(
                "invalid_grant",
                "code_verifier does not match the code_challenge",
            ));
        }
        self.issue_tokens(&issued.pairing, None)
    }

    /// The OAuth pairing whose refresh token has this hash: its current one (`false`) or one it
    /// rotated out (`true`).
    fn pairing_by_refresh(
        &self,
        hash: &str,
    ) -> Option<(PairingId, PairingState, OAuthGrant, bool)> {
        self.domain()
            .pairings
            .iter()
            .find_map(|p| match &p.credential {
                Credential::OAuth(grant) if grant.refresh_hash.as_deref() == Some(hash) => {
                    Some((p.id.clone(), p.state, grant.clone(), false))
                }
                Credential::OAuth(grant) if grant.retired.iter().any(|r| r == hash) => {
                    Some((p.id.clone(), p.state, grant.clone(), true))
                }
                _ => None,
            })
    }

    /// Rotates a refresh token: the old one stops working, and presenting a rotated-out one
    /// again revokes the pairing.
    pub fn oauth_refresh(
        &self,
        client_id: &str,
        refresh_token: &str,
    ) -> Result<TokenSet, OAuthError> {
        let hash = secret_hash(refresh_token);
        let now = self.now();
        let found = self.pairing_by_refresh(&hash);
        let Some((pairing, state, grant, replayed)) = found else {
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token is unknown",
            ));
        };
        if grant.client_id != client_id {
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token was issued to another client",
            ));
        }
        if replayed {
            if state == PairingState::Approved {
                tracing::warn!(
                    "a rotated-out refresh token was presented; pairing {pairing} revoked"
                );
                let _revoked = self.pairing_revoke(&pairing);
            }
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token was already used; the pairing is revoked, ask the person to approve again",
            ));
        }
        if state != PairingState::Approved {
            return Err(OAuthError::new(
                "invalid_grant",
                "the person revoked this pairing; authorize again",
            ));
        }
        if grant.refresh_expires_at.is_some_and(|at| at <= now) {
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token expired; authorize again",
            ));
        }
        self.issue_tokens(&pairing, Some(hash))
    }

    /// New access and refresh tokens for an approved pairing; `rotating` is the refresh token
    /// they replace.
    fn issue_tokens(
        &self,
        pairing: &PairingId,
        rotating: Option<String>,
    ) -> Result<TokenSet, OAuthError> {
        let now = self.now();
        let lifetime = access_lifetime();
        let access = random_token(self, "lomi_at_");
        let access_hash = AccessHash {
            hash: secret_hash(&access),
            expires_at: now.plus_millis(millis(lifetime)),
        };
        let refresh = random_token(self, "lomi_rt_");
        let refresh_hash = secret_hash(&refresh);
        let granted = self
            .update_domain(|domain| {
                let Some(p) = domain.pairings.iter_mut().find(|p| &p.id == pairing) else {
                    return Err(lomi_protocol::ToolError::not_found("the pairing is gone"));
                };
                if p.state != PairingState::Approved {
                    return Err(lomi_protocol::ToolError::invalid(
                        "the pairing is not approved",
                    ));
                }
                let Credential::OAuth(grant) = &mut p.credential else {
                    return Err(lomi_protocol::ToolError::invalid("not an OAuth pairing"));
                };
                if grant.refresh_hash != rotating && rotating.is_some() {
                    return Err(lomi_protocol::ToolError::invalid(
                        "the refresh token was just rotated",
                    ));
                }
                if let Some(old) = grant.refresh_hash.take() {
                    grant.retired.push(old);
                    let excess = grant.retired.len().saturating_sub(RETIRED_REFRESH_KEPT);
                    grant.retired.drain(..excess);
                }
                grant.refresh_hash = Some(refresh_hash.clone());
                grant.refresh_expires_at = Some(now.plus_millis(millis(REFRESH_TOKEN_LIFETIME)));
                grant.access.retain(|a| a.expires_at > now);
                grant.access.push(access_hash.clone());
                let excess = grant.access.len().saturating_sub(ACCESS_KEPT);
                grant.access.drain(..excess);
                Ok(p.families.clone())
            })
            .map_err(|e| OAuthError::new("invalid_grant", e.message))?;
        Ok(TokenSet {
            access_token: access,
            token_type: "Bearer",
            expires_in: lifetime.as_secs(),
            refresh_token: refresh,
            scope: match granted {
                Some(families) => families.iter().map(|f| f.scope()).collect::<Vec<_>>(),
                None => lomi_protocol::Family::ALL
                    .iter()
                    .map(|f| f.scope())
                    .collect(),
            }
            .join(" "),
        })
    }

    /// The pairing of a live access token (an expired one is none: its client refreshes).
    pub(crate) fn pairing_by_access_token(&self, hash: &str) -> Option<PairingId> {
        use subtle::ConstantTimeEq;
        let now = self.now();
        let mut holder = None;
        for pairing in &self.domain().pairings {
            let Credential::OAuth(grant) = &pairing.credential else {
                continue;
            };
            for token in &grant.access {
                if bool::from(token.hash.as_bytes().ct_eq(hash.as_bytes()))
                    && token.expires_at > now
                    && holder.is_none()
                {
                    holder = Some(pairing.id.clone());
                }
            }
        }
        holder
    }

    /// Revokes a token (RFC 7009): an access token stops working; a refresh token ends its
    /// pairing's grant, as revoking the pairing does. Unknown tokens are no error.
    pub fn oauth_revoke_token(&self, token: &str) {
        let hash = secret_hash(token);
        let by_access = self.domain().pairings.iter().any(|p| match &p.credential {
            Credential::OAuth(grant) => grant.access.iter().any(|a| a.hash == hash),
            _ => false,
        });
        if by_access {
            let _saved = self.update_domain(|domain| {
                for p in &mut domain.pairings {
                    if let Credential::OAuth(grant) = &mut p.credential {
                        grant.access.retain(|a| a.hash != hash);
                    }
                }
                Ok(())
            });
            return;
        }
        let pairing = self
            .pairing_by_refresh(&hash)
            .and_then(|(pairing, _, _, replayed)| (!replayed).then_some(pairing));
        if let Some(pairing) = pairing {
            let _revoked = self.pairing_revoke(&pairing);
        }
    }
}

/// A client's name as shown to the person: no control characters, at most 120 characters,
/// `fallback` when nothing is left.
fn shown_name(name: &str, fallback: &str) -> String {
    let name: String = name.chars().filter(|c| !c.is_control()).take(120).collect();
    if name.trim().is_empty() {
        fallback.to_owned()
    } else {
        name
    }
}

/// 1 to [`MAX_REDIRECT_URIS`] redirect URIs, each one [`check_redirect_uri`] accepts; `how`
/// says where they come from ("register", "the document must list").
fn check_redirect_uris(redirect_uris: &[String], how: &str) -> Result<(), OAuthError> {
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("{how} 1 to {MAX_REDIRECT_URIS} redirect_uris"),
        ));
    }
    redirect_uris
        .iter()
        .try_for_each(|uri| check_redirect_uri(uri))
}

/// A redirect URI a client may register: `http` on a loopback host (any port; RFC 8252 §7.3),
/// or `https`; absolute, no fragment, no user info.
pub fn check_redirect_uri(uri: &str) -> Result<(), OAuthError> {
    let bad = |why: &str| OAuthError::new("invalid_redirect_uri", format!("{uri:?}: {why}"));
    let parsed = url::Url::parse(uri).map_err(|e| bad(&e.to_string()))?;
    if parsed.fragment().is_some() {
        return Err(bad("a redirect URI has no fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("a redirect URI has no user info"));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_host(&parsed) => Ok(()),
        "http" => Err(bad(
            "an http redirect URI must be on 127.0.0.1, [::1] or localhost",
        )),
        _ => Err(bad(
            "only http (loopback) and https redirect URIs are accepted",
        )),
    }
}

fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether `redirect_uri` is one the client registered: exactly, or for a loopback `http`
/// URI, the same but for the port (a native app picks a free port each time, RFC 8252 §7.3).
pub fn redirect_registered(client: &OAuthClient, redirect_uri: &str) -> bool {
    let Ok(asked) = url::Url::parse(redirect_uri) else {
        return false;
    };
    client.redirect_uris.iter().any(|registered| {
        if registered == redirect_uri {
            return true;
        }
        let Ok(mut registered) = url::Url::parse(registered) else {
            return false;
        };
        if registered.scheme() != "http" || !is_loopback_host(&registered) {
            return false;
        }
        let mut asked = asked.clone();
        let (Ok(()), Ok(())) = (registered.set_port(None), asked.set_port(None)) else {
            return false;
        };
        registered == asked
    })
}

/// PKCE S256: BASE64URL(SHA-256(verifier)) == challenge, the verifier 43–128 unreserved
/// characters (RFC 7636 §4.1).
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    use base64::Engine;
    use sha2::Digest;
    let valid = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    if !valid {
        return false;
    }
    let computed =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier));
    use subtle::ConstantTimeEq;
    bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_an_independently_computed_challenge() {
        // The challenge computed by Python's hashlib and base64.urlsafe_b64encode.
        let verifier = "dBjftJeZ4CVP-mJ92K9ZMuOmtnoahpFLEH8D6OQHWZU";
        assert!(pkce_matches(
            verifier,
            "wpiMkxnUTKcljCctD-Ohl2QzAmEbmCQXTpIabDtjd_g"
        ));
        assert!(!pkce_matches(
            verifier,
            "wpiMkxnUTKcljCctD-Ohl2QzAmEbmCQXTpIabDtjd_h"
        ));
        assert!(!pkce_matches("short", "anything"));
    }

    #[test]
    fn redirect_uris_are_loopback_http_or_https_and_match_up_to_the_loopback_port() {
        for good in [
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "http://[::1]:9/x",
            "https://vscode.dev/redirect",
        ] {
            assert!(check_redirect_uri(good).is_ok(), "{good}");
        }
        for bad in [
            "http://example.com/cb",
            "http://127.0.0.1/cb#frag",
            "javascript:alert(1)",
            "http://user@127.0.0.1/cb",
            "not a url",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
        let client = OAuthClient {
            client_id: "c".into(),
            client_name: "n".into(),
            redirect_uris: vec![
                "http://127.0.0.1:5000/callback".into(),
                "https://vscode.dev/redirect".into(),
            ],
            created_at: Timestamp::from_millis(0),
            metadata_document: false,
        };
        assert!(redirect_registered(
            &client,
            "http://127.0.0.1:6123/callback"
        ));
        assert!(!redirect_registered(&client, "http://127.0.0.1:6123/other"));
        assert!(!redirect_registered(
            &client,
            "http://localhost:5000/callback"
        ));
        assert!(redirect_registered(&client, "https://vscode.dev/redirect"));
        assert!(!redirect_registered(
            &client,
            "https://vscode.dev:444/redirect"
        ));
    }
}

//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; MCP
//! authorization prefers them to registration): a client whose `client_id` is an https URL is
//! known by the JSON document at that URL, which Lomi fetches with tight limits — public
//! addresses only, no redirects, 5 KiB, 5 s — and checks before anything else of the request.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use lomi_broker::oauth::OAuthError;

/// Largest document Lomi reads (the draft's advice: 5 kilobytes).
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// How long resolving, connecting and reading the document may take in all.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A PEM file of the one certificate authority `lomi serve` trusts for metadata documents
/// instead of the platform's, which also lets it fetch from loopback: set by the end-to-end
/// tests for their own HTTPS server, read by nothing else (docs/decisions.md, "Client ID
/// metadata documents").
pub const TEST_CA_VAR: &str = "LOMI_CIMD_TEST_CA";

/// What Lomi keeps of a checked document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
}

/// Fetches documents: the platform's roots and public addresses, or under test the test
/// authority only and loopback too.
#[derive(Clone, Default)]
pub struct Fetcher {
    test_ca: Option<reqwest::Certificate>,
    /// Why no document can be fetched (the test authority could not be read).
    unusable: Option<String>,
}

/// Whether a `client_id` names a metadata document (else it is one Lomi registered).
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

fn refused(description: impl Into<String>) -> OAuthError {
    OAuthError::new("invalid_client", description)
}

impl Fetcher {
    /// The fetcher `lomi serve` uses: with [`TEST_CA_VAR`] set, its authority and loopback.
    pub fn from_env() -> Fetcher {
        let Some(path) = std::env::var_os(TEST_CA_VAR) else {
            return Fetcher::default();
        };
        let read = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|pem| reqwest::Certificate::from_pem(&pem).map_err(|e| e.to_string()));
        match read {
            Ok(ca) => {
                tracing::warn!(
                    "{TEST_CA_VAR}: client metadata documents are trusted from {} only, loopback included (a test setting)",
                    std::path::Path::new(&path).display()
                );
                Fetcher {
                    test_ca: Some(ca),
                    unusable: None,
                }
            }
            Err(error) => {
                let why = format!(
                    "{TEST_CA_VAR} ({}) could not be read: {error}",
                    std::path::Path::new(&path).display()
                );
                tracing::error!("{why}; no client metadata document will be fetched");
                Fetcher {
                    test_ca: None,
                    unusable: Some(why),
                }
            }
        }
    }

    /// Fetches and checks the document of `client_id`; every refusal says why, for the page
    /// the person sees.
    pub async fn fetch(&self, client_id: &str) -> Result<Document, OAuthError> {
        let url = check_url(client_id)?;
        if let Some(why) = &self.unusable {
            return Err(refused(why.clone()));
        }
        let port = url.port_or_known_default().unwrap_or(443);
        let loopback_ok = self.test_ca.is_some();
        let work = async {
            let address = resolve(&url, port, loopback_ok).await?;
            let body = self.get(&url, address).await?;
            parse(client_id, &body)
        };
        tokio::time::timeout(FETCH_TIMEOUT, work)
            .await
            .unwrap_or_else(|_| {
                Err(refused(format!(
                    "the client's metadata document at {client_id} did not arrive within {} s",
                    FETCH_TIMEOUT.as_secs()
                )))
            })
    }

    /// GET at the vetted address (the name is not looked up again, so it cannot be moved to
    /// another address in between); 200 only, no redirects, at most [`MAX_DOCUMENT_BYTES`].
    async fn get(&self, url: &url::Url, address: SocketAddr) -> Result<Vec<u8>, OAuthError> {
        lomi_chat::providers::install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .https_only(true)
            .no_proxy()
            .timeout(FETCH_TIMEOUT);
        if let Some(url::Host::Domain(name)) = url.host() {
            builder = builder.resolve(name, address);
        }
        if let Some(ca) = &self.test_ca {
            builder = builder.tls_certs_only([ca.clone()]);
        }
        let client = builder
            .build()
            .map_err(|e| refused(format!("Lomi cannot make its HTTP client: {e}")))?;
        let mut response = client
            .get(url.as_str())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| {
                refused(format!(
                    "the client's metadata document at {url} could not be fetched: {}",
                    error_chain(&e)
                ))
            })?;
        let status = response.status();
        if status.is_redirection() {
            return Err(refused(format!(
                "the client's metadata document at {url} answered a redirect ({status}); Lomi does not follow redirects for client metadata"
            )));
        }
        if status != reqwest::StatusCode::OK {
            return Err(refused(format!(
                "the client's metadata document at {url} answered HTTP {status}, not 200"
            )));
        }
        let too_large = || {
            refused(format!(
                "the client's metadata document at {url} is larger than {MAX_DOCUMENT_BYTES} bytes"
            ))
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            refused(format!(
                "the client's metadata document at {url} was cut off: {}",
                error_chain(&e)
            ))
        })? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A client ID URL as the draft asks: https, a host, a path other than `/`, no user info, no
/// fragment, and in its normal form (no dot segments, no default port, lower-case scheme and
/// host), since the document's `client_id` is compared with it as a string.
fn check_url(client_id: &str) -> Result<url::Url, OAuthError> {
    let bad = |why: &str| refused(format!("client_id {client_id:?} {why}"));
    let url = url::Url::parse(client_id).map_err(|e| bad(&format!("is not a URL: {e}")))?;
    if url.scheme() != "https" {
        return Err(bad("must be an https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must have no user info"));
    }
    if url.fragment().is_some() {
        return Err(bad("must have no fragment"));
    }
    if url.host().is_none() || url.path() == "/" || url.path().is_empty() {
        return Err(bad(
            "must have a host and a path (the document's own address)",
        ));
    }
    if url.as_str() != client_id {
        return Err(bad(&format!(
            "must be written in its normal form ({:?}: no dot segments, no default port)",
            url.as_str()
        )));
    }
    Ok(url)
}

/// The address to fetch from: every address the host has must be public (or loopback, under
/// test), so a client cannot make Lomi reach into the person's network.
async fn resolve(url: &url::Url, port: u16, loopback_ok: bool) -> Result<SocketAddr, OAuthError> {
    let addresses: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| {
                refused(format!(
                    "the client's metadata host {name} could not be resolved: {e}"
                ))
            })?
            .collect(),
        None => Vec::new(),
    };
    if let Some(private) = addresses.iter().find(|a| !fetchable(a.ip(), loopback_ok)) {
        return Err(refused(format!(
            "the client's metadata document at {url} is on a private address ({}); Lomi fetches client metadata from public addresses only",
            private.ip()
        )));
    }
    addresses.into_iter().next().ok_or_else(|| {
        refused(format!(
            "the client's metadata host of {url} has no address"
        ))
    })
}

/// Whether Lomi may fetch a metadata document from `ip`: a public unicast address, or a
/// loopback one when `loopback_ok` (under test).
pub fn fetchable(ip: IpAddr, loopback_ok: bool) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                return loopback_ok;
            }
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (RFC 6598)
                || (a == 192 && b == 0) // IETF protocol assignments
                || (a == 198 && (18..20).contains(&b)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return fetchable(IpAddr::V4(v4), loopback_ok);
            }
            if v6.is_loopback() {
                return loopback_ok;
            }
            let first = v6.segments()[0];
            !(v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || (first == 0x0064 && v6.segments()[1] == 0xff9b)) // NAT64 to anything
        }
    }
}

/// The document's fields Lomi uses, checked: a JSON object whose `client_id` is exactly the
/// URL, public (no secret, `token_endpoint_auth_method` none), with 1 to 8 redirect URIs.
fn parse(client_id: &str, body: &[u8]) -> Result<Document, OAuthError> {
    let bad = |why: String| {
        OAuthError::new(
            "invalid_client_metadata",
            format!("the client's metadata document at {client_id} {why}"),
        )
    };
    let serde_json::Value::Object(fields) =
        serde_json::from_slice(body).map_err(|e| bad(format!("is not JSON: {e}")))?
    else {
        return Err(bad("is not a JSON object".to_owned()));
    };
    match fields.get("client_id").and_then(|v| v.as_str()) {
        Some(id) if id == client_id => {}
        Some(id) => return Err(bad(format!("names another client_id ({id:?})"))),
        None => return Err(bad("has no client_id".to_owned())),
    }
    if fields.contains_key("client_secret") {
        return Err(bad(
            "holds a client_secret; a published document cannot keep a secret".to_owned(),
        ));
    }
    match fields.get("token_endpoint_auth_method") {
        None => {}
        Some(serde_json::Value::String(method)) if method == "none" => {}
        Some(other) => {
            return Err(bad(format!(
                "asks for token_endpoint_auth_method {other}; Lomi serves public clients (\"none\") that prove themselves with PKCE"
            )));
        }
    }
    let redirect_uris = match fields.get("redirect_uris") {
        Some(serde_json::Value::Array(uris)) if !uris.is_empty() => uris
            .iter()
            .map(|u| u.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("lists a redirect URI that is not a string".to_owned()))?,
        _ => return Err(bad("lists no redirect_uris".to_owned())),
    };
    let client_name = match fields.get("client_name") {
        None => String::new(),
        Some(serde_json::Value::String(name)) => name.clone(),
        Some(_) => return Err(bad("has a client_name that is not a string".to_owned())),
    };
    Ok(Document {
        client_id: client_id.to_owned(),
        client_name,
        redirect_uris,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_fetched_and_loopback_only_under_test() {
        for public in [
            "93.184.216.34",
            "2606:2800:220:1:248:1893:25c8:1946",
            "1.1.1.1",
        ] {
            assert!(fetchable(public.parse().expect("ip"), false), "{public}");
        }
        for private in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "fd00::1",
            "fe80::1",
            "::",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!fetchable(private.parse().expect("ip"), true), "{private}");
        }
        for loopback in ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"] {
            assert!(
                !fetchable(loopback.parse().expect("ip"), false),
                "{loopback}"
            );
            assert!(fetchable(loopback.parse().expect("ip"), true), "{loopback}");
        }
    }

    #[test]
    fn client_id_urls_are_https_with_a_path_in_normal_form() {
        assert!(check_url("https://client.example/oauth/metadata.json").is_ok());
        assert!(check_url("https://127.0.0.1:8443/client.json").is_ok());
        for bad in [
            "http://client.example/metadata.json",
            "https://client.example",
            "https://client.example/",
            "https://user@client.example/m.json",
            "https://client.example/m.json#x",
            "https://client.example/a/../m.json",
            "https://client.example:443/m.json",
            "https://Client.Example/m.json",
            "lomi_client_abc",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_document_must_name_itself_and_be_public() {
        let id = "https://client.example/m.json";
        let good = serde_json::json!({
            "client_id": id, "client_name": "Example", "redirect_uris": ["http://127.0.0.1/cb"],
            "token_endpoint_auth_method": "none",
        });
        let doc = parse(id, good.to_string().as_bytes()).expect("a good document");
        assert_eq!(doc.client_name, "Example");
        assert_eq!(doc.redirect_uris, ["http://127.0.0.1/cb"]);
        for (bad, why) in [
            (
                serde_json::json!({"client_id": "https://other.example/m.json", "redirect_uris": ["http://127.0.0.1/cb"]}),
                "another client_id",
            ),
            (
                serde_json::json!({"redirect_uris": ["http://127.0.0.1/cb"]}),
                "no client_id",
            ),
            (
                serde_json::json!({"client_id": id, "redirect_uris": []}),
                "no redirect_uris",
            ),
            (
                serde_json::json!({"client_id": id, "redirect_uris": [1]}),
                "not a string",
            ),
            (
                serde_json::json!({"client_id": id, "redirect_uris": ["http://127.0.0.1/cb"], "client_secret": "s"}),
                "client_secret",
            ),
            (
                serde_json::json!({"client_id": id, "redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
                "public clients",
            ),
            (
                serde_json::json!(["not", "an", "object"]),
                "not a JSON object",
            ),
        ] {
            let error = parse(id, bad.to_string().as_bytes()).expect_err(why);
            assert!(
                error.description.contains(why),
                "{why}: {}",
                error.description
            );
        }
    }
}

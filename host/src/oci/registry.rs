//! The distribution API calls toolhost makes, over one [`Transport`]: manifests by
//! tag or digest, blobs by digest (size and digest checked), monolithic blob uploads
//! and manifest pushes, each answering an auth challenge once.

use std::sync::Mutex;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode};
use sha2::{Digest, Sha256};
use url::Url;

use super::OciError;
use super::auth::{Challenge, Credentials, TokenAnswer, bearer_header, parse_challenges};
use super::reference::OciRef;
use super::transport::{RegistrySettings, Request, Transport, read_bounded, read_bounded_told};

/// The manifest types asked for (an index is recognised only to be refused).
pub(crate) const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json";

/// Pull or push access to one repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Pull,
    Push,
}

/// A client of one registry and repository.
pub struct RegistryClient {
    transport: Transport,
    base: Url,
    repository: String,
    credentials: Credentials,
    settings: RegistrySettings,
    /// The `Authorization` the last challenge earned (a token, or basic auth).
    authorization: Mutex<Option<HeaderValue>>,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient").field("base", &self.base.as_str()).finish_non_exhaustive()
    }
}

/// `sha256:HEX` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Whether `digest` is `sha256:` and 64 lower-case hex digits (safe in a path or a URL).
pub(crate) fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl RegistryClient {
    /// A client for the registry and repository of `reference`.
    pub fn new(
        reference: &OciRef,
        settings: RegistrySettings,
        credentials: Credentials,
    ) -> Result<Self, OciError> {
        let transport = Transport::new(reference, &settings)?;
        Ok(Self {
            transport,
            base: reference.base_url(settings.plain_http)?,
            repository: reference.repository().to_string(),
            credentials,
            settings,
            authorization: Mutex::new(None),
        })
    }

    /// The settings this client bounds its traffic with.
    pub fn settings(&self) -> &RegistrySettings {
        &self.settings
    }

    fn url(&self, path: &str) -> Result<Url, OciError> {
        self.base
            .join(&format!("v2/{}/{path}", self.repository))
            .map_err(|e| OciError::InvalidReference(format!("{}: {e}", self.repository)))
    }

    fn current_authorization(&self) -> Option<HeaderValue> {
        let earned = self.authorization.lock().unwrap_or_else(|e| e.into_inner()).clone();
        earned.or_else(|| match &self.credentials {
            Credentials::Bearer(token) => bearer_header(token),
            _ => None,
        })
    }

    /// Send a request built by `make`; on a `401` answer its challenge once and retry.
    async fn send(&self, access: Access, make: impl Fn() -> Request) -> Result<Response, OciError> {
        let mut request = make();
        request.authorization = self.current_authorization();
        let response = self.transport.send(request).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let challenge = parse_challenges(response.headers().get_all(WWW_AUTHENTICATE).iter());
        let authorization = match challenge {
            Some(Challenge::Basic) => self.credentials.basic_header().ok_or_else(|| {
                OciError::Registry(format!(
                    "{}: HTTP 401: the registry asks for credentials (pass --registry-auth to use your docker login)",
                    self.base
                ))
            })?,
            Some(Challenge::Bearer { realm, service, scope }) => {
                self.token(&realm, service.as_deref(), scope.as_deref(), access).await?
            }
            None => return Err(OciError::Registry(format!("{}: HTTP 401 without a usable challenge", self.base))),
        };
        *self.authorization.lock().unwrap_or_else(|e| e.into_inner()) = Some(authorization.clone());
        let mut request = make();
        request.authorization = Some(authorization);
        let response = self.transport.send(request).await?;
        if response.status() == StatusCode::UNAUTHORIZED || response.status() == StatusCode::FORBIDDEN {
            return Err(OciError::Registry(format!(
                "{}: HTTP {}: the credentials were not accepted for {}",
                self.base,
                response.status().as_u16(),
                self.repository
            )));
        }
        Ok(response)
    }

    /// Ask the token server `realm` for a token; the basic credentials go along only when
    /// the realm is the registry itself.
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: Option<&str>,
        access: Access,
    ) -> Result<HeaderValue, OciError> {
        let mut url =
            Url::parse(realm).map_err(|e| OciError::Registry(format!("token realm {realm:?}: {e}")))?;
        let wanted = match access {
            Access::Pull => format!("repository:{}:pull", self.repository),
            Access::Push => format!("repository:{}:pull,push", self.repository),
        };
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", scope.unwrap_or(&wanted));
        }
        let mut request = Request::new(Method::GET, url.clone());
        if self.transport.is_registry(&url) {
            request.authorization = self.credentials.basic_header();
        }
        let response = self.transport.send(request).await?;
        if !response.status().is_success() {
            return Err(OciError::Registry(format!(
                "token server {}: HTTP {}",
                url.origin().ascii_serialization(),
                response.status().as_u16()
            )));
        }
        let body = read_bounded(response, self.settings.max_manifest_bytes, "the token answer").await?;
        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|e| {
            OciError::Registry(format!(
                "token server {}: not a token answer: {e}",
                url.origin().ascii_serialization()
            ))
        })?;
        answer.header().ok_or_else(|| OciError::Registry("the token server sent no usable token".into()))
    }

    /// The manifest `reference` (a tag or a digest): its bytes, its computed digest and
    /// its media type. `Ok(None)` when the registry has none by that name. Pulled by
    /// digest, the bytes must hash to it.
    pub async fn manifest(&self, reference: &str) -> Result<Option<(Vec<u8>, String, String)>, OciError> {
        let url = self.url(&format!("manifests/{reference}"))?;
        let response = self
            .send(Access::Pull, || {
                let mut r = Request::new(Method::GET, url.clone());
                r.headers.insert(ACCEPT, HeaderValue::from_static(MANIFEST_ACCEPT));
                r
            })
            .await?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(status_error(&url, status));
        }
        let media_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let what = format!("the manifest {}/{reference}", self.repository);
        let bytes = read_bounded(response, self.settings.max_manifest_bytes, &what).await?;
        let digest = digest_of(&bytes);
        if reference.starts_with("sha256:") && digest != reference {
            return Err(OciError::DigestMismatch(format!(
                "{what}: the registry sent bytes whose digest is {digest}"
            )));
        }
        Ok(Some((bytes, digest, media_type)))
    }

    /// The blob `digest` of `size` bytes (at most `limit`): refused before it is asked
    /// for when `size` is over `limit`; its bytes must be exactly `size` long and hash
    /// to `digest`.
    pub async fn blob(&self, digest: &str, size: u64, limit: u64, what: &str) -> Result<Vec<u8>, OciError> {
        if size > limit {
            return Err(OciError::TooLarge(format!(
                "{what} {digest} is {size} bytes; at most {limit} are pulled"
            )));
        }
        if !is_sha256_digest(digest) {
            return Err(OciError::Unsupported(format!(
                "{what}: digest {digest:?} is not sha256:<64 hex digits>"
            )));
        }
        let url = self.url(&format!("blobs/{digest}"))?;
        let response = self.send(Access::Pull, || Request::new(Method::GET, url.clone())).await?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Err(OciError::NotFound(format!("{what} {digest}: the registry has no such blob")));
        }
        if !status.is_success() {
            return Err(status_error(&url, status));
        }
        // One byte past the declared size shows a longer blob without reading it all.
        let step = crate::engine::progress::start(
            self.settings().progress.as_ref(),
            &format!("pulling {what}"),
            Some(size),
        );
        let bytes = match read_bounded_told(response, size + 1, what, step.as_deref()).await {
            Err(OciError::TooLarge(_)) => {
                return Err(OciError::DigestMismatch(format!(
                    "{what} {digest}: longer than the {size} bytes declared"
                )));
            }
            other => other?,
        };
        if bytes.len() as u64 != size {
            return Err(OciError::DigestMismatch(format!(
                "{what} {digest}: {} bytes arrived, the manifest declares {size}",
                bytes.len()
            )));
        }
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(OciError::DigestMismatch(format!(
                "{what}: asked for {digest}, the bytes hash to {actual}"
            )));
        }
        Ok(bytes)
    }

    /// Upload `bytes` as one blob (a monolithic upload); its digest.
    pub async fn push_blob(&self, bytes: &[u8]) -> Result<String, OciError> {
        let digest = digest_of(bytes);
        let start = self.url("blobs/uploads/")?;
        let response = self.send(Access::Push, || Request::new(Method::POST, start.clone())).await?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(status_error(&start, response.status()));
        }
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| start.join(l).ok())
            .ok_or_else(|| OciError::Registry(format!("{start}: an upload started without a Location")))?;
        let mut upload = location;
        upload.query_pairs_mut().append_pair("digest", &digest);
        let body = bytes::Bytes::copy_from_slice(bytes);
        let response = self
            .send(Access::Push, || {
                let mut r = Request::new(Method::PUT, upload.clone());
                r.headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
                r.body = Some(body.clone());
                r
            })
            .await?;
        if response.status() != StatusCode::CREATED {
            return Err(status_error(&upload, response.status()));
        }
        Ok(digest)
    }

    /// Push a manifest under `reference` (a tag); its digest.
    pub async fn push_manifest(
        &self,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<String, OciError> {
        let url = self.url(&format!("manifests/{reference}"))?;
        let content_type = HeaderValue::from_str(media_type)
            .map_err(|_| OciError::Unsupported(format!("media type {media_type:?}")))?;
        let body = bytes::Bytes::copy_from_slice(bytes);
        let response = self
            .send(Access::Push, || {
                let mut r = Request::new(Method::PUT, url.clone());
                r.headers.insert(CONTENT_TYPE, content_type.clone());
                r.body = Some(body.clone());
                r
            })
            .await?;
        if response.status() != StatusCode::CREATED {
            let status = response.status();
            let text = read_bounded(response, 4096, "the error").await.unwrap_or_default();
            return Err(OciError::Registry(format!(
                "{url}: HTTP {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&text).trim()
            )));
        }
        Ok(digest_of(bytes))
    }
}

fn status_error(url: &Url, status: StatusCode) -> OciError {
    OciError::Registry(format!("{url}: HTTP {}", status.as_u16()))
}

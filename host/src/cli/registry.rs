//! What the registry commands (`add oci://…`, `update`, `publish`) share: how to reach
//! the registry, its credentials, and a key's password.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::oci::{Credentials, OciRef, RegistrySettings, Store};

/// The variable a signing key's password is read from (scripts, CI).
pub(crate) const PASSWORD_ENV: &str = "TOOLHOST_KEY_PASSWORD";

/// How to reach a registry.
#[derive(Args, Clone, Default)]
pub(crate) struct RegistryArgs {
    /// Speak plain HTTP to the registry: only for one on this machine (localhost,
    /// 127.0.0.0/8, ::1), such as a test or local registry.
    #[arg(long)]
    pub(crate) plain_http: bool,
    /// Log in with the registry's own entry in your docker config
    /// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json). It is sent to that
    /// registry only, and never printed.
    #[arg(long)]
    pub(crate) registry_auth: bool,
    /// Longest wait for a registry's next bytes, in milliseconds (default 30000).
    #[arg(long, value_name = "MS")]
    registry_timeout_ms: Option<u64>,
    /// Largest component pulled, in MiB (default 200): a manifest naming a larger
    /// layer is refused before the layer is asked for.
    #[arg(long, value_name = "MIB")]
    max_layer_mib: Option<u64>,
}

impl RegistryArgs {
    /// The transport settings these flags give.
    pub(crate) fn settings(&self) -> RegistrySettings {
        let mut settings = RegistrySettings {
            plain_http: self.plain_http,
            progress: super::progress::if_terminal(),
            ..RegistrySettings::from_env()
        };
        if let Some(ms) = self.registry_timeout_ms {
            settings.read_timeout = Duration::from_millis(ms.max(1));
            settings.connect_timeout = settings.connect_timeout.min(settings.read_timeout);
        }
        if let Some(mib) = self.max_layer_mib {
            settings.max_layer_bytes = mib.saturating_mul(1 << 20);
        }
        settings
    }

    /// The credentials for `reference`'s registry: anonymous unless --registry-auth.
    pub(crate) fn credentials(&self, reference: &OciRef) -> anyhow::Result<Credentials> {
        if !self.registry_auth {
            return Ok(Credentials::Anonymous);
        }
        Ok(Credentials::from_docker_config(&reference.registry(), None)?)
    }

    /// A client for `reference`'s registry.
    pub(crate) fn client(&self, reference: &OciRef) -> anyhow::Result<toolhost::oci::RegistryClient> {
        Ok(toolhost::oci::RegistryClient::new(reference, self.settings(), self.credentials(reference)?)?)
    }
}

/// The store of pulled components (`oci` in the cache dir).
pub(crate) fn store() -> anyhow::Result<Store> {
    Store::default_root()
        .map(Store::at)
        .context("no cache dir for the OCI store: set TOOLHOST_CACHE_DIR (or XDG_CACHE_HOME or HOME)")
}

/// A password: from TOOLHOST_KEY_PASSWORD, else asked on the terminal (`confirm`: twice).
pub(crate) fn password(prompt: &str, confirm: bool) -> anyhow::Result<Vec<u8>> {
    if let Some(value) = std::env::var_os(PASSWORD_ENV) {
        return Ok(value.into_encoded_bytes());
    }
    if !std::io::stdin().is_terminal() {
        bail!("no password: set {PASSWORD_ENV} (or make the key with --no-password)");
    }
    let first = rpassword::prompt_password(prompt).context("reading the password")?;
    if confirm && rpassword::prompt_password("again: ").context("reading the password")? != first {
        bail!("the two passwords differ");
    }
    Ok(first.into_bytes())
}

/// Read the signing key at `path` (cosign's encrypted PEM): the empty password first
/// (a key made with --no-password), then TOOLHOST_KEY_PASSWORD or the terminal.
pub(crate) fn signing_key(path: &Path) -> anyhow::Result<toolhost::oci::SigningKey> {
    use toolhost::oci::SigningKey;
    let text = read_small_text(path)?;
    if std::env::var_os(PASSWORD_ENV).is_none()
        && let Ok(key) = SigningKey::from_encrypted_pem(&text, b"")
    {
        return Ok(key);
    }
    let password = password(&format!("password for {}: ", path.display()), false)?;
    SigningKey::from_encrypted_pem(&text, &password).with_context(|| format!("{}", path.display()))
}

/// A small text file the user names (a key, a trusted root), following links.
pub(crate) fn read_small_text(path: &Path) -> anyhow::Result<String> {
    let bytes = toolhost::hostfs::read_regular_following(path, 1 << 20)
        .with_context(|| format!("{}", path.display()))?
        .with_context(|| format!("{}: no such file", path.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))
}

//! `toolhost keygen PREFIX` and `toolhost publish FILE.wasm oci://HOST/REPO:TAG`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::oci::OciRef;
use toolhost::oci::SigningKey;
use toolhost::oci::{ComponentInfo, build_artifact};
use toolhost::{Engine, EngineSettings};

use super::registry::{RegistryArgs, password, signing_key};

/// `toolhost keygen`'s arguments.
#[derive(Args)]
pub(crate) struct KeygenArgs {
    /// Writes PREFIX.key (the private key, 0600, cosign's encrypted format) and
    /// PREFIX.pub (the public key to trust). Existing files are never overwritten.
    prefix: PathBuf,
    /// Encrypt the private key with the empty password (for scripts; anyone who can
    /// read the file can sign).
    #[arg(long)]
    no_password: bool,
}

/// `toolhost publish`'s arguments.
#[derive(Args)]
pub(crate) struct PublishArgs {
    /// The component.
    file: PathBuf,
    /// Where: oci://HOST[:PORT]/REPO:TAG.
    reference: String,
    /// Sign it with this private key (PREFIX.key from `toolhost keygen`, or cosign's);
    /// its password from TOOLHOST_KEY_PASSWORD or the terminal.
    #[arg(long, value_name = "PREFIX.key")]
    key: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// Create `path` with `mode`, refusing to replace anything there.
fn create_new(path: &Path, mode: u32, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("{} (never overwritten)", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}

/// `toolhost keygen PREFIX`
pub(crate) fn keygen(args: &KeygenArgs) -> anyhow::Result<ExitCode> {
    let with = |ext: &str| {
        let mut name = args.prefix.as_os_str().to_os_string();
        name.push(ext);
        PathBuf::from(name)
    };
    let (private, public) = (with(".key"), with(".pub"));
    for path in [&private, &public] {
        if path.symlink_metadata().is_ok() {
            bail!("{} exists; keygen never overwrites a key", path.display());
        }
    }
    let password = if args.no_password { Vec::new() } else { password("password for the new key: ", true)? };
    let (key, pkcs8) = SigningKey::generate()?;
    let pem = SigningKey::to_encrypted_pem(&pkcs8, &password)?;
    create_new(&private, 0o600, pem.as_bytes())?;
    create_new(&public, 0o644, key.public_key().to_pem().as_bytes())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "private key: {} (keep it secret; sign with `toolhost publish … --key`)",
        private.display()
    )?;
    writeln!(out, "public key:  {} (trust it with `toolhost add … --trust-key`)", public.display())?;
    writeln!(out, "fingerprint: {}", key.public_key().fingerprint())?;
    Ok(ExitCode::SUCCESS)
}

/// When the artifact says it was made: `SOURCE_DATE_EPOCH` when set (reproducible
/// pushes), else now.
fn created() -> String {
    let secs =
        std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `toolhost publish FILE.wasm oci://HOST[:PORT]/REPO:TAG`
pub(crate) async fn publish(args: &PublishArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference)?;
    let component = toolhost::hostfs::read_regular_following(&args.file, 512 << 20)
        .with_context(|| format!("{}", args.file.display()))?
        .with_context(|| format!("{}: no such file", args.file.display()))?;
    // Only a component the host can load is worth publishing; its imports and exports
    // go in the artifact's config.
    let engine = Engine::new(&EngineSettings::default())?;
    let report = toolhost::inspect_bytes(&engine, &args.file.display().to_string(), &component, None).await?;
    let key = args.key.as_deref().map(signing_key).transpose()?;
    let info = ComponentInfo { imports: report.imports.clone(), exports: report.exports.clone() };
    let artifact = build_artifact(&component, info, &created())?;
    let client = args.registry.client(&reference)?;
    let published = toolhost::oci::publish(&client, &reference, &component, &artifact, key.as_ref()).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "published {}", published.reference)?;
    writeln!(out, "component sha256: {}", report.sha256)?;
    match &key {
        Some(key) => writeln!(out, "signed by key {}", key.public_key().fingerprint())?,
        None => writeln!(out, "not signed (toolhost add requires a signature; sign with --key)")?,
    }
    Ok(ExitCode::SUCCESS)
}

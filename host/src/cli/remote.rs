//! `toolhost add oci://…` / `add https://…`, `toolhost update NAME` and
//! `toolhost remove NAME`: entries whose component comes from a registry or a URL.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::oci::PublicKey;
use toolhost::oci::TrustedRoot;
use toolhost::oci::{Identity, OciRef, TrustSet};
use toolhost::oci::{Pulled, fetch_pinned_url, from_store, pull};
use toolhost::policy::{EntrySource, PluginEntry, RemoteDraft};
use toolhost::{Engine, EngineSettings, Policy};

use super::plugins::{Candidate, EntryArgs, admit, examine, print_report, write_entry};
use super::registry::{RegistryArgs, read_small_text, store};

/// Who must have signed a registry component, and an https one's hash.
#[derive(Args, Clone, Default)]
pub(crate) struct SignerArgs {
    /// Trust signatures by this public key (PREFIX.pub from `toolhost keygen`, or a
    /// cosign public key; ECDSA P-256). Written into the policy's [trust.keys] (repeatable).
    #[arg(long = "trust-key", value_name = "PREFIX.pub")]
    trust_keys: Vec<PathBuf>,
    /// Trust keyless signatures whose certificate names this subject (an email or a
    /// URI); needs --trust-issuer and a trusted root.
    #[arg(long, value_name = "SUBJECT", requires = "trust_issuer")]
    trust_identity: Option<String>,
    /// The OIDC issuer --trust-identity's certificate must name.
    #[arg(long, value_name = "ISSUER", requires = "trust_identity")]
    trust_issuer: Option<String>,
    /// The trusted root keyless signatures are checked against (Sigstore's
    /// trusted_root.json format); pinned by its sha256 in [trust].
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<PathBuf>,
    /// The sha256 an https:// component must have (required for such a source).
    #[arg(long, value_name = "HEX")]
    sha256: Option<String>,
}

impl SignerArgs {
    /// The trust set these flags give, and what the entry writes for it.
    fn trust(&self, args: &EntryArgs, plain_http: bool) -> anyhow::Result<(TrustSet, RemoteDraft)> {
        let mut trust = TrustSet::default();
        let mut draft = RemoteDraft { plain_http, ..RemoteDraft::default() };
        for path in &self.trust_keys {
            let pem = read_small_text(path)?;
            let key = PublicKey::from_pem(&pem).with_context(|| format!("--trust-key {}", path.display()))?;
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let name: String =
                stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
            PluginEntry::check_name(&name)
                .map_err(|e| anyhow::anyhow!("--trust-key {}: {e}", path.display()))?;
            draft.keys.push((name.clone(), key.to_pem()));
            trust.keys.push((name, key));
        }
        if let (Some(subject), Some(issuer)) = (&self.trust_identity, &self.trust_issuer) {
            let root = self.trusted_root.as_ref().context("--trust-identity needs --trusted-root FILE")?;
            let bytes = read_small_text(root)?;
            trust.root = Some(std::sync::Arc::new(
                TrustedRoot::from_json(bytes.as_bytes()).with_context(|| format!("{}", root.display()))?,
            ));
            trust.identities.push(Identity { subject: subject.clone(), issuer: issuer.clone() });
            draft.identities.push((subject.clone(), issuer.clone()));
            draft.trusted_root =
                Some((args.file_source(root)?, toolhost::policy::sha256_hex(bytes.as_bytes())));
        }
        if trust.is_empty() {
            bail!(
                "{}: a registry component is added only signed: name its signer with --trust-key PREFIX.pub \
                 or --trust-identity SUBJECT --trust-issuer ISSUER",
                toolhost::codes::SIGNATURE_MISSING
            );
        }
        Ok((trust, draft))
    }
}

/// The last part of a path or repository, without `.wasm`: the entry's default name.
fn stem_of(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or(path);
    last.strip_suffix(".wasm").unwrap_or(last).to_string()
}

/// `toolhost add oci://…` or `toolhost add https://…`
pub(crate) async fn add(
    source: &str,
    args: &EntryArgs,
    signers: &SignerArgs,
    registry: &RegistryArgs,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if source.starts_with("https://") || source.starts_with("http://") {
        let url = url::Url::parse(source).with_context(|| source.to_string())?;
        let sha256 = signers
            .sha256
            .as_deref()
            .context("an https:// component needs --sha256 HEX: its bytes, pinned")?;
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("--sha256: `{sha256}` is not 64 hex digits");
        }
        // Checked in memory (hash, imports); stored only once admitted.
        let (bytes, unstored) = fetch_pinned_url(&url, sha256, &registry.settings(), &store()?).await?;
        let candidate = Candidate {
            label: url.to_string(),
            bytes,
            source: url.to_string(),
            stem: stem_of(url.path()),
            remote: None,
        };
        let (report, draft) = examine(&candidate, args).await?;
        print_report(&mut out, &candidate.label, &report, &draft)?;
        admit(&report, &draft, args)?;
        unstored.keep(&candidate.bytes)?;
        write_entry(&draft, args, &mut out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let reference = OciRef::parse(source)?;
    let (trust, mut remote) = signers.trust(args, registry.plain_http)?;
    remote.registry_auth = registry.registry_auth;
    let client = registry.client(&reference)?;
    let store = store()?;
    let pulled = pull(&reference, &client, Some(&trust), &store).await?;
    let candidate = candidate_of(&pulled, &reference, remote);
    let (report, draft) = examine(&candidate, args).await?;
    print_report(&mut out, &candidate.label, &report, &draft)?;
    print_provenance(&mut out, &pulled)?;
    admit(&report, &draft, args)?;
    pulled.keep(&store)?;
    write_entry(&draft, args, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// What `add` and `inspect` examine of a component pulled from `reference`.
fn candidate_of(pulled: &Pulled, reference: &OciRef, remote: RemoteDraft) -> Candidate {
    Candidate {
        label: pulled.reference.to_string(),
        bytes: pulled.component.clone(),
        source: pulled.reference.to_string(),
        stem: stem_of(reference.repository()),
        remote: Some(remote),
    }
}

/// `toolhost inspect oci://…`: pulled into memory, verified, shown; nothing written.
pub(crate) async fn inspect(
    source: &str,
    args: &EntryArgs,
    signers: &SignerArgs,
    registry: &RegistryArgs,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(source)?;
    let (trust, remote) = signers.trust(args, registry.plain_http)?;
    let client = registry.client(&reference)?;
    let pulled = pull(&reference, &client, Some(&trust), &store()?).await?;
    let candidate = candidate_of(&pulled, &reference, remote);
    let (report, draft) = examine(&candidate, args).await?;
    let mut out = std::io::stdout().lock();
    if as_json {
        let doc = serde_json::json!({
            "source": candidate.label,
            "manifest": pulled.digest,
            "signed_by": pulled.signer.as_ref().map(ToString::to_string),
            "sha256": report.sha256,
            "imports": report.imports,
            "requested": report.requested,
            "tools": report.tools,
            "entry": toolhost::policy::plugin_entry_toml(&draft),
            "refused": report.refused.as_ref().map(|e| e.to_string()),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        print_report(&mut out, &candidate.label, &report, &draft)?;
        print_provenance(&mut out, &pulled)?;
    }
    Ok(if report.refused.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn print_provenance(out: &mut impl Write, pulled: &Pulled) -> std::io::Result<()> {
    writeln!(out, "manifest: {}", pulled.digest)?;
    if let Some(signer) = &pulled.signer {
        writeln!(out, "signed by: {signer}")?;
    }
    Ok(())
}

/// `toolhost update` and `toolhost remove`'s arguments.
#[derive(Args)]
pub(crate) struct NameArgs {
    /// The entry (`plugins.NAME`).
    name: String,
    /// The policy file (default: toolhost.toml in the work dir).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The work dir whose toolhost.toml is meant.
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
}

impl NameArgs {
    fn policy_path(&self) -> PathBuf {
        self.policy.clone().unwrap_or_else(|| self.work_dir.join(toolhost::policy::POLICY_FILE))
    }
}

/// `toolhost update NAME`: re-resolve the entry's tag, show what changed, and ask.
pub(crate) async fn update(args: &NameArgs, registry: &RegistryArgs, yes: bool) -> anyhow::Result<ExitCode> {
    let path = args.policy_path();
    // Only a policy the user trusts as it is now is rewritten: check before pulling.
    let config = super::trust::before_rewrite(&path, &args.work_dir)?;
    let policy = Policy::load(&path)?;
    let entry = policy
        .plugins
        .iter()
        .find(|e| e.name == args.name)
        .with_context(|| format!("{}: no entry plugins.{}", path.display(), args.name))?;
    let EntrySource::Oci(pinned) = &entry.source else {
        bail!("plugins.{} is not from a registry (source {}): nothing to update", entry.name, entry.source);
    };
    let Some(tag) = pinned.tag() else { bail!("plugins.{}: its source names no tag to follow", entry.name) };
    let mut registry = registry.clone();
    registry.plain_http |= entry.plain_http;
    registry.registry_auth |= entry.registry_auth;
    let client = registry.client(pinned)?;
    let store = store()?;
    let signers = entry.signers.as_ref();
    let latest = pull(&pinned.without_digest(), &client, signers, &store).await?;
    let mut out = std::io::stdout().lock();
    if Some(latest.digest.as_str()) == pinned.digest() {
        writeln!(out, "plugins.{} is up to date: {tag} is still {}", entry.name, latest.digest)?;
        return Ok(ExitCode::SUCCESS);
    }
    let current = match from_store(pinned, signers, &store, registry.settings().max_layer_bytes)? {
        Some(current) => current,
        None => pull(pinned, &client, signers, &store).await?,
    };
    let engine = Engine::new(&EngineSettings::default())?;
    // Judged by the entry's grants, but not by its pinned hash: that is what changes.
    let mut grants = entry.grants(&toolhost::Limits::default(), false, std::env::vars());
    grants.sha256 = None;
    let old =
        toolhost::inspect_bytes(&engine, &current.reference.to_string(), &current.component, Some(&grants))
            .await?;
    let new =
        toolhost::inspect_bytes(&engine, &latest.reference.to_string(), &latest.component, Some(&grants))
            .await?;
    writeln!(out, "plugins.{}: {tag} moved", entry.name)?;
    writeln!(out, "  manifest: {} -> {}", current.digest, latest.digest)?;
    writeln!(out, "  sha256:   {} -> {}", old.sha256, new.sha256)?;
    if let Some(signer) = &latest.signer {
        writeln!(out, "  signed by: {signer}")?;
    }
    let added: Vec<&String> = new.imports.iter().filter(|i| !old.imports.contains(i)).collect();
    let removed: Vec<&String> = old.imports.iter().filter(|i| !new.imports.contains(i)).collect();
    if added.is_empty() && removed.is_empty() {
        writeln!(out, "  imports: unchanged")?;
    }
    for import in added {
        writeln!(out, "  + imports {import}")?;
    }
    for import in removed {
        writeln!(out, "  - no longer imports {import}")?;
    }
    let old_tools: Vec<&str> = old.tools.iter().map(|t| t.name.as_str()).collect();
    let new_tools: Vec<&str> = new.tools.iter().map(|t| t.name.as_str()).collect();
    if old_tools != new_tools {
        writeln!(out, "  tools: {} -> {}", old_tools.join(", "), new_tools.join(", "))?;
    }
    if let Some(err) = &new.refused {
        writeln!(out, "  under the entry's grants it would be refused: {err}")?;
        writeln!(out, "not rewritten: widen the entry first (edit it, or `toolhost add` it again)")?;
        return Ok(ExitCode::from(1));
    }
    if !(yes || super::approve::confirm(&format!("rewrite plugins.{} to {}?", entry.name, latest.reference))?)
    {
        writeln!(out, "not rewritten (answer y, or pass --yes)")?;
        return Ok(ExitCode::from(1));
    }
    latest.keep(&store)?;
    toolhost::policy::set_plugin_source(&path, &entry.name, &latest.reference.to_string(), &new.sha256)?;
    super::trust::after_rewrite(&path, config.as_ref())?;
    writeln!(out, "updated plugins.{} in {}", entry.name, path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// `toolhost remove NAME`
pub(crate) fn remove(args: &NameArgs) -> anyhow::Result<ExitCode> {
    let path = args.policy_path();
    let config = super::trust::before_rewrite(&path, &args.work_dir)?;
    if !toolhost::policy::remove_plugin_entry(&path, &args.name)? {
        bail!("{}: no entry plugins.{}", path.display(), args.name);
    }
    super::trust::after_rewrite(&path, config.as_ref())?;
    writeln!(std::io::stdout().lock(), "removed plugins.{} from {}", args.name, path.display())?;
    Ok(ExitCode::SUCCESS)
}

//! `sigstore-peer`: the independent cosign implementation tests/tests/sigstore_interop.rs
//! checks toolhost against, a command line over sigstore-rs's cosign client and keys.
//!
//! ```text
//! sigstore-peer keygen [--password P] PREFIX
//!     a new ECDSA P-256 key: PREFIX.key (cosign's encrypted PEM), PREFIX.pub
//! sigstore-peer public-key --key KEY [--password P]
//!     the public PEM of the private key file KEY
//! sigstore-peer sign-push --registry HOST:PORT --key KEY [--password P] [--payload-of OTHER] IMAGE
//!     sign the payload naming the manifest OTHER (default: IMAGE) resolves to, and push
//!     it to the signature tag of the manifest IMAGE resolves to
//! sigstore-peer verify --registry HOST:PORT --key PUB IMAGE
//!     the signature layers on IMAGE, and whether one is by the public key PUB
//! ```
//!
//! Every result is one JSON line on stdout. Exit 0: done (verified); 1: `verify` found no
//! layer by the key; 2: anything else went wrong (stderr says what).
//!
//! IMAGE is `oci://HOST:PORT/REPO:TAG` or `…@DIGEST`. The peer speaks plain HTTP to the
//! `--registry` alone, which must be a loopback address, and any other destination goes
//! through a proxy on a closed loopback port: nothing it does can leave the machine,
//! whatever the environment's proxy variables say.

use std::net::SocketAddr;
use std::process::ExitCode;

use serde_json::{Value, json};
use sigstore::cosign::constraint::{Constraint, PrivateKeySigner};
use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{Client, ClientBuilder, CosignCapabilities, SignatureLayer, verify_constraints};
use sigstore::crypto::SigningScheme;
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};

const SCHEME: SigningScheme = SigningScheme::ECDSA_P256_SHA256_ASN1;

const USAGE: &str = "usage: sigstore-peer keygen [--password P] PREFIX
       sigstore-peer public-key --key KEY [--password P]
       sigstore-peer sign-push --registry HOST:PORT --key KEY [--password P] [--payload-of OTHER] IMAGE
       sigstore-peer verify --registry HOST:PORT --key PUB IMAGE";

/// A command's outcome: its JSON line, and whether it is a refusal (exit 1).
struct Outcome {
    line: Value,
    refused: bool,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(outcome) => {
            println!("{}", outcome.line);
            ExitCode::from(u8::from(outcome.refused))
        }
        Err(e) => {
            eprintln!("sigstore-peer: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<Outcome, String> {
    let (command, rest) = args.split_first().ok_or(USAGE)?;
    let args = Args::parse(rest)?;
    let done = |line| Ok(Outcome { line, refused: false });
    match command.as_str() {
        "keygen" => done(keygen(&args)?),
        "public-key" => {
            let pair = read_key(&args)?;
            done(json!({ "public_key": pem(pair.public_key_to_pem())? }))
        }
        "sign-push" => done(block_on(sign_push(&args))?),
        "verify" => block_on(verify(&args)),
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    }
}

/// The options (`--name value`) and the one positional argument of a command.
struct Args {
    options: Vec<(String, String)>,
    positional: Option<String>,
}

impl Args {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut parsed = Args { options: Vec::new(), positional: None };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if let Some(name) = arg.strip_prefix("--") {
                let value = args.next().ok_or_else(|| format!("--{name} needs a value\n{USAGE}"))?;
                parsed.options.push((name.to_string(), value.clone()));
            } else if parsed.positional.replace(arg.clone()).is_some() {
                return Err(format!("more than one argument: {arg:?}\n{USAGE}"));
            }
        }
        Ok(parsed)
    }

    fn option(&self, name: &str) -> Option<&str> {
        self.options.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn required(&self, name: &str) -> Result<&str, String> {
        self.option(name).ok_or_else(|| format!("--{name} is required\n{USAGE}"))
    }

    fn image(&self) -> Result<&str, String> {
        self.positional.as_deref().ok_or_else(|| format!("an argument is missing\n{USAGE}"))
    }

    fn password(&self) -> &[u8] {
        self.option("password").unwrap_or("").as_bytes()
    }
}

fn block_on<T>(f: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    runtime.map_err(|e| format!("a tokio runtime: {e}"))?.block_on(f)
}

fn pem(result: Result<impl AsRef<[u8]>, sigstore::errors::SigstoreError>) -> Result<String, String> {
    let bytes = result.map_err(|e| format!("encoding a PEM: {e}"))?;
    String::from_utf8(bytes.as_ref().to_vec()).map_err(|e| format!("a PEM that is not UTF-8: {e}"))
}

fn write(path: &str, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("writing {path}: {e}"))
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))
}

/// A new key, written as `PREFIX.key` (encrypted with `--password`, empty by default)
/// and `PREFIX.pub`.
fn keygen(args: &Args) -> Result<Value, String> {
    let prefix = args.image()?;
    let signer = SCHEME.create_signer().map_err(|e| format!("making a key: {e}"))?;
    let pair = signer.to_sigstore_keypair().map_err(|e| format!("making a key: {e}"))?;
    let (key, public) = (format!("{prefix}.key"), format!("{prefix}.pub"));
    write(&key, &pem(pair.private_key_to_encrypted_pem(args.password()))?)?;
    write(&public, &pem(pair.public_key_to_pem())?)?;
    Ok(json!({ "key": key, "public_key": public }))
}

/// The private key file `--key`, decrypted with `--password`.
fn read_key(args: &Args) -> Result<SigStoreKeyPair, String> {
    let path = args.required("key")?;
    SigStoreKeyPair::from_encrypted_pem(&read(path)?, args.password())
        .map_err(|e| format!("the key file {path} does not decrypt with the password given: {e}"))
}

/// sigstore-rs's cosign client for the `--registry`: plain HTTP to it alone, HTTPS to any
/// other host, and that through a proxy on a closed loopback port.
fn cosign_client(args: &Args) -> Result<Client, String> {
    let registry = args.required("registry")?;
    let addr: SocketAddr =
        registry.parse().map_err(|e| format!("--registry {registry:?} is not an IP:PORT: {e}"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("--registry {registry} is not a loopback address"));
    }
    let dead_end = Some("http://127.0.0.1:1".to_string());
    let config = ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.to_string()]),
        http_proxy: dead_end.clone(),
        https_proxy: dead_end,
        no_proxy: Some(addr.ip().to_string()),
        ..ClientConfig::default()
    };
    ClientBuilder::default()
        .with_oci_client_config(config)
        .build()
        .map_err(|e| format!("sigstore-rs's cosign client: {e}"))
}

/// `oci://HOST:PORT/REPO…` as sigstore-rs names it.
fn oci_ref(reference: &str) -> Result<OciReference, String> {
    let bare = reference.strip_prefix("oci://").ok_or_else(|| format!("{reference} is not oci://…"))?;
    bare.parse().map_err(|e| format!("{bare}: {e}"))
}

/// The signature tag and the manifest digest `reference` resolves to.
async fn triangulate(
    client: &mut Client,
    reference: &OciReference,
) -> Result<(OciReference, String), String> {
    client.triangulate(reference, &Auth::Anonymous).await.map_err(|e| format!("resolving {reference}: {e}"))
}

async fn sign_push(args: &Args) -> Result<Value, String> {
    let mut client = cosign_client(args)?;
    let pair = read_key(args)?;
    let target = oci_ref(args.image()?)?;
    let signed = match args.option("payload-of") {
        Some(other) => oci_ref(other)?,
        None => target.clone(),
    };
    let (_, digest) = triangulate(&mut client, &signed).await?;
    let (signature_ref, _) = triangulate(&mut client, &target).await?;
    let mut layer =
        SignatureLayer::new_unsigned(&signed, &digest).map_err(|e| format!("the payload: {e}"))?;
    let signer = pair.to_sigstore_signer(&SCHEME).map_err(|e| format!("a signer for the key: {e}"))?;
    let signed_it = PrivateKeySigner::new_with_signer(signer)
        .add_constraint(&mut layer)
        .map_err(|e| format!("signing: {e}"))?;
    if !signed_it {
        return Err("sigstore-rs did not sign the payload".to_string());
    }
    client
        .push_signature(None, &Auth::Anonymous, &signature_ref, vec![layer])
        .await
        .map_err(|e| format!("pushing the signature to {signature_ref}: {e}"))?;
    Ok(json!({ "signed": digest, "pushed_to": signature_ref.to_string() }))
}

/// The layers' payloads, and whether one is signed by the public key `--key`.
async fn verify(args: &Args) -> Result<Outcome, String> {
    let mut client = cosign_client(args)?;
    let path = args.required("key")?;
    let verifier = PublicKeyVerifier::try_from(read(path)?.as_slice())
        .map_err(|e| format!("{path} is not a PEM public key: {e}"))?;
    let image = oci_ref(args.image()?)?;
    let layers = client
        .trusted_signature_layers(&Auth::Anonymous, &image)
        .await
        .map_err(|e| format!("the signature layers of {image}: {e}"))?;
    let payloads = layers
        .iter()
        .map(|layer| serde_json::to_value(&layer.simple_signing))
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|e| format!("a payload as JSON: {e}"))?;
    let constraints: VerificationConstraintVec = vec![Box::new(verifier)];
    Ok(match verify_constraints(&layers, constraints.iter()) {
        Ok(()) => Outcome { line: json!({ "verified": true, "layers": payloads }), refused: false },
        Err(e) => {
            let reason = format!("{} layer(s), none by the key: {e:?}", layers.len());
            Outcome {
                line: json!({ "verified": false, "layers": payloads, "reason": reason }),
                refused: true,
            }
        }
    })
}

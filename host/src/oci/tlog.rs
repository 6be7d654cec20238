//! A Rekor transparency-log entry, checked offline against the log's key from the
//! trusted root: its signed entry timestamp (SET: the log's signature over the
//! canonical JSON of body, integrated time, log id and index) and, where the entry
//! carries one, its inclusion proof (RFC 6962 / RFC 9162 §2.1.3.2: the leaf
//! `SHA-256(0x00 ‖ body)` hashed up the audit path to the root hash) and the
//! checkpoint that signs that root (a signed note: `origin\nsize\nroot\n…\n\n— name
//! base64(key hint ‖ signature)`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::keys::PublicKey;

/// Most hashes an audit path may hold (a tree of 2^64 leaves needs 64).
const MAX_PROOF_HASHES: usize = 64;

/// What the log signed about one entry.
pub(crate) struct EntryClaim<'a> {
    /// The entry's body, base64 (as logged).
    pub(crate) body_b64: &'a str,
    /// When it was integrated (seconds since the epoch).
    pub(crate) integrated_time: i64,
    /// The log's id (sha256 of its key), hex.
    pub(crate) log_id_hex: &'a str,
    /// Its index in the log.
    pub(crate) log_index: i64,
}

/// Check the SET `set` (ASN.1 ECDSA) over `claim` with the log's `key`.
pub(crate) fn verify_set(key: &PublicKey, claim: &EntryClaim<'_>, set: &[u8]) -> Result<(), String> {
    // The canonical JSON: keys sorted, no spaces (the values are a base64 string, two
    // integers and a hex string, which need no escaping beyond what serde writes).
    let canonical = format!(
        r#"{{"body":{},"integratedTime":{},"logID":{},"logIndex":{}}}"#,
        serde_json::Value::from(claim.body_b64),
        claim.integrated_time,
        serde_json::Value::from(claim.log_id_hex),
        claim.log_index
    );
    if !key.verifies(canonical.as_bytes(), set) {
        return Err("the transparency log's signed entry timestamp does not verify".into());
    }
    Ok(())
}

/// An inclusion proof as a bundle carries it.
pub(crate) struct InclusionProof<'a> {
    /// The leaf's index in the tree the proof is for (not the global log index).
    pub(crate) index: u64,
    /// The tree's size.
    pub(crate) tree_size: u64,
    /// The tree's root hash.
    pub(crate) root_hash: Vec<u8>,
    /// The audit path, leaf to root.
    pub(crate) hashes: Vec<Vec<u8>>,
    /// The signed checkpoint for that tree.
    pub(crate) checkpoint: &'a str,
}

fn node(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update([1u8]);
    hash.update(left);
    hash.update(right);
    hash.finalize().to_vec()
}

/// The root hash the audit path `proof` gives for `leaf` at `index` of `size` leaves.
pub(crate) fn root_from_proof(
    index: u64,
    size: u64,
    leaf: &[u8],
    proof: &[Vec<u8>],
) -> Result<Vec<u8>, String> {
    if index >= size {
        return Err(format!("the inclusion proof's index {index} is not below its tree size {size}"));
    }
    if proof.len() > MAX_PROOF_HASHES || proof.iter().any(|h| h.len() != 32) {
        return Err("the inclusion proof's hashes are not SHA-256 hashes (or too many)".into());
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = leaf.to_vec();
    for p in proof {
        if s == 0 {
            return Err("the inclusion proof is longer than its tree".into());
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err("the inclusion proof is shorter than its tree".into());
    }
    Ok(r)
}

/// Check that `body` (the entry, decoded) is in the tree `proof` names, and that the
/// log's `key` (id `key_id`) signed that tree's checkpoint.
pub(crate) fn verify_inclusion(
    key: &PublicKey,
    key_id: &[u8],
    body: &[u8],
    proof: &InclusionProof<'_>,
) -> Result<(), String> {
    let mut leaf = Sha256::new();
    leaf.update([0u8]);
    leaf.update(body);
    let root = root_from_proof(proof.index, proof.tree_size, &leaf.finalize(), &proof.hashes)?;
    if root != proof.root_hash {
        return Err("the inclusion proof does not lead to its root hash".into());
    }
    let (size, signed_root) = verify_checkpoint(key, key_id, proof.checkpoint)?;
    if size != proof.tree_size || signed_root != proof.root_hash {
        return Err("the checkpoint signs another tree than the inclusion proof's".into());
    }
    Ok(())
}

/// Check a checkpoint (a signed note) with the log's `key`: the signature line whose
/// key hint is the first four bytes of `key_id`; the tree size and root hash it signs.
fn verify_checkpoint(key: &PublicKey, key_id: &[u8], note: &str) -> Result<(u64, Vec<u8>), String> {
    let (text, signatures) = note.split_once("\n\n").ok_or("the checkpoint has no signature")?;
    let text = format!("{text}\n");
    let mut lines = text.lines();
    let (_origin, size, root) = (lines.next(), lines.next(), lines.next());
    let size: u64 = size.and_then(|s| s.parse().ok()).ok_or("the checkpoint's tree size is not a number")?;
    let root =
        root.and_then(|r| STANDARD.decode(r).ok()).ok_or("the checkpoint's root hash is not base64")?;
    let hint = key_id.get(..4).ok_or("the log's key id is too short")?;
    let signed = signatures.lines().filter_map(|l| l.strip_prefix("\u{2014} ")).any(|line| {
        let Some(raw) = line.rsplit_once(' ').and_then(|(_, b64)| STANDARD.decode(b64).ok()) else {
            return false;
        };
        raw.len() > 4 && &raw[..4] == hint && key.verifies(text.as_bytes(), &raw[4..])
    });
    if !signed {
        return Err("the checkpoint is not signed by the log".into());
    }
    Ok((size, root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(data: &[u8]) -> Vec<u8> {
        let mut hash = Sha256::new();
        hash.update([0u8]);
        hash.update(data);
        hash.finalize().to_vec()
    }

    /// The RFC 6962 root of `leaves`, computed whole.
    fn root(leaves: &[Vec<u8>]) -> Vec<u8> {
        if leaves.len() == 1 {
            return leaves[0].clone();
        }
        let k = leaves.len().next_power_of_two() / 2;
        node(&root(&leaves[..k]), &root(&leaves[k..]))
    }

    /// The audit path for leaf `m` of `leaves` (RFC 6962 §2.1.1).
    fn path(m: usize, leaves: &[Vec<u8>]) -> Vec<Vec<u8>> {
        if leaves.len() == 1 {
            return Vec::new();
        }
        let k = leaves.len().next_power_of_two() / 2;
        if m < k {
            let mut p = path(m, &leaves[..k]);
            p.push(root(&leaves[k..]));
            p
        } else {
            let mut p = path(m - k, &leaves[k..]);
            p.push(root(&leaves[..k]));
            p
        }
    }

    #[test]
    fn every_leaf_of_trees_of_every_shape_proves_its_root_and_nothing_else_does() {
        for size in 1..=17usize {
            let leaves: Vec<Vec<u8>> = (0..size).map(|i| leaf(&[i as u8])).collect();
            let want = root(&leaves);
            for m in 0..size {
                let proof = path(m, &leaves);
                assert_eq!(root_from_proof(m as u64, size as u64, &leaves[m], &proof).unwrap(), want);
                if size > 1 {
                    let other = (m + 1) % size;
                    assert_ne!(
                        root_from_proof(other as u64, size as u64, &leaves[m], &proof).ok(),
                        Some(want.clone())
                    );
                    let mut short = proof.clone();
                    short.pop();
                    assert_ne!(
                        root_from_proof(m as u64, size as u64, &leaves[m], &short).ok(),
                        Some(want.clone())
                    );
                }
            }
        }
        assert!(root_from_proof(3, 3, &leaf(b"x"), &[]).is_err());
    }
}

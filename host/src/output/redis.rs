//! The output store in Redis: for instances on several machines
//! (`--store redis://HOST:PORT`), with the bounds of the store on disk
//! (`super::disk`) and an expiry.
//!
//! - Keys are named by the sha256 of the call id and the part (a
//!   model-supplied id such as `*` or `../x` names one key of ours, never a
//!   pattern or another key), under the hash tag `{toolhost-outputs}` so that
//!   every key the scripts touch lives in one Redis Cluster slot.
//! - A put is one Lua script, so instances writing at once never see half of
//!   it: the text is `SET` with the expiry, its key added to an index (a sorted
//!   set by the server's own clock) with its size, and then the oldest entries
//!   go until the store holds at most `max_bytes` and `max_entries`. Entries
//!   whose expiry passed leave the index and the byte count first.
//! - A get refuses a value larger than the budget (someone else wrote it) or
//!   one that is not UTF-8, without sending it over.
//! - Every command is bounded in time (connect, response, and an overall
//!   [`OP_TIMEOUT`]): a Redis that went away is an error naming it, never a
//!   hang. The connection manager reconnects when Redis comes back.
//! - One-time claims (`super::claims`): one Lua script sets the claim's key
//!   only when it is absent, with its expiry, and indexes it (a sorted set by
//!   expiry) so that at most `max_entries` are outstanding; under their own
//!   hash tag `{toolhost-claims}`.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use sha2::{Digest, Sha256};

use super::Part;
use super::claims::{self, Claim};
use super::stored::StoreError;

/// How long connecting to Redis may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one command may wait for its answer.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one store operation may take in all (reconnecting included).
pub(crate) const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// The hash tag shared by every key (one Cluster slot).
const PREFIX: &str = "toolhost:{toolhost-outputs}";

/// Keep `ARGV[1]` under `KEYS[4]` for `ARGV[4]` ms; index it in `KEYS[1]`
/// (sorted set by time) with its size in `KEYS[2]` (hash) and the total in
/// `KEYS[3]`; then drop expired and oldest entries until at most `ARGV[2]`
/// bytes and `ARGV[3]` entries remain. Returns the bytes kept.
const PUT: &str = r"
local index, sizes, total, key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local text = ARGV[1]
local max_bytes, max_entries, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function drop(member)
  local size = tonumber(redis.call('HGET', sizes, member)) or 0
  redis.call('HDEL', sizes, member)
  redis.call('ZREM', index, member)
  redis.call('DEL', member)
  redis.call('DECRBY', total, size)
end
if redis.call('ZSCORE', index, key) then drop(key) end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', now - ttl)) do drop(member) end
redis.call('SET', key, text, 'PX', ttl)
redis.call('ZADD', index, now, key)
redis.call('HSET', sizes, key, #text)
local bytes = redis.call('INCRBY', total, #text)
while bytes > max_bytes or redis.call('ZCARD', index) > max_entries do
  local oldest = redis.call('ZRANGE', index, 0, 0)[1]
  if not oldest then break end
  drop(oldest)
  bytes = tonumber(redis.call('GET', total)) or 0
end
for _, name in ipairs({index, sizes, total}) do redis.call('PEXPIRE', name, ttl) end
return bytes
";

/// The hash tag of the claims' keys.
const CLAIMS: &str = "toolhost:{toolhost-claims}";

/// Claim `KEYS[1]` for `ARGV[1]` ms unless it exists (0), indexing it in
/// `KEYS[2]` (sorted set by expiry): 1 claimed, -1 refused when `ARGV[2]`
/// claims that have not expired are indexed already.
const CLAIM: &str = r"
local key, index = KEYS[1], KEYS[2]
local ttl, max = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('EXISTS', key) == 1 then return 0 end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
if redis.call('ZCARD', index) >= max then return -1 end
redis.call('SET', key, '1', 'PX', ttl)
redis.call('ZADD', index, now + ttl, key)
if redis.call('PTTL', index) < ttl then redis.call('PEXPIRE', index, ARGV[1]) end
return 1
";

/// The value of `KEYS[1]`, or `false` when it is over `ARGV[1]` bytes.
const GET: &str = r"
if redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then return false end
return redis.call('GET', KEYS[1])
";

/// Full outputs in a Redis several hosts share.
pub(crate) struct RedisStore {
    /// The URL without its password, for messages.
    shown: Arc<str>,
    connection: ConnectionManager,
    put: redis::Script,
    get: redis::Script,
    claim: redis::Script,
    max_bytes: usize,
    max_entries: usize,
    expiry: Duration,
}

impl RedisStore {
    /// Connect to the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`) and
    /// check that it answers.
    pub(crate) async fn connect(
        url: &str,
        max_bytes: usize,
        max_entries: usize,
        expiry: Duration,
    ) -> Result<Self, StoreError> {
        let shown: Arc<str> = shown_url(url).into();
        let unreachable = |why: String| StoreError::Unreachable { store: shown.to_string(), why };
        let client = redis::Client::open(url)
            .map_err(|e| StoreError::BadUrl { url: shown.to_string(), why: e.to_string() })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(1);
        let connection = tokio::time::timeout(OP_TIMEOUT, ConnectionManager::new_with_config(client, config))
            .await
            .map_err(|_| unreachable(format!("no answer within {} s", OP_TIMEOUT.as_secs())))?
            .map_err(|e| unreachable(e.to_string()))?;
        let store = Self {
            shown: shown.clone(),
            connection,
            put: redis::Script::new(PUT),
            get: redis::Script::new(GET),
            claim: redis::Script::new(CLAIM),
            max_bytes,
            max_entries: max_entries.max(1),
            expiry: expiry.max(Duration::from_millis(1)),
        };
        let mut connection = store.connection.clone();
        store.bounded(async move { redis::cmd("PING").query_async::<String>(&mut connection).await }).await?;
        Ok(store)
    }

    /// The URL, without a password.
    pub(crate) fn url(&self) -> &str {
        &self.shown
    }

    fn key(&self, call_id: &str, part: Part) -> String {
        let digest = hex::encode(Sha256::digest(call_id.as_bytes()));
        format!("{PREFIX}:out:{}.{}", &digest[..40], part.as_str())
    }

    /// Run one Redis operation within [`OP_TIMEOUT`], its failure named.
    async fn bounded<T>(&self, op: impl Future<Output = redis::RedisResult<T>>) -> Result<T, StoreError> {
        let unreachable = |why: String| StoreError::Unreachable { store: self.shown.to_string(), why };
        match tokio::time::timeout(OP_TIMEOUT, op).await {
            Err(_) => Err(unreachable(format!("no answer within {} s", OP_TIMEOUT.as_secs()))),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Ok(Ok(value)) => Ok(value),
        }
    }

    /// Keep `text` as `part` of `call_id` (the caller checked it fits the budget).
    pub(crate) async fn put(&self, call_id: &str, part: Part, text: &str) -> Result<(), StoreError> {
        let mut invocation = self.put.prepare_invoke();
        invocation
            .key(format!("{PREFIX}:index"))
            .key(format!("{PREFIX}:sizes"))
            .key(format!("{PREFIX}:bytes"))
            .key(self.key(call_id, part))
            .arg(text)
            .arg(self.max_bytes)
            .arg(self.max_entries)
            .arg(self.expiry.as_millis().min(i64::MAX as u128) as i64);
        let mut connection = self.connection.clone();
        self.bounded(async move { invocation.invoke_async::<i64>(&mut connection).await }).await?;
        Ok(())
    }

    /// The text of `part` of `call_id`, if kept; a value over the budget or
    /// not UTF-8 is refused (and logged) as a miss.
    pub(crate) async fn get(&self, call_id: &str, part: Part) -> Result<Option<Arc<str>>, StoreError> {
        let mut invocation = self.get.prepare_invoke();
        invocation.key(self.key(call_id, part)).arg(self.max_bytes);
        let mut connection = self.connection.clone();
        let value = self
            .bounded(async move { invocation.invoke_async::<Option<Vec<u8>>>(&mut connection).await })
            .await?;
        let Some(bytes) = value else { return Ok(None) };
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(text.into())),
            Err(_) => {
                tracing::warn!(store = %self.shown, call_id, "refused a stored output that is not UTF-8");
                Ok(None)
            }
        }
    }

    /// Claim `name` until `until`, once among the processes sharing this Redis.
    pub(crate) async fn claim(&self, name: &str, until: std::time::SystemTime) -> Result<Claim, StoreError> {
        let ttl =
            claims::keep_for(until, std::time::SystemTime::now()).as_millis().clamp(1, i64::MAX as u128);
        let mut invocation = self.claim.prepare_invoke();
        invocation
            .key(format!("{CLAIMS}:claim:{}", claims::digest(name)))
            .key(format!("{CLAIMS}:index"))
            .arg(ttl as i64)
            .arg(self.max_entries);
        let mut connection = self.connection.clone();
        let answer =
            self.bounded(async move { invocation.invoke_async::<i64>(&mut connection).await }).await?;
        match answer {
            1 => Ok(Claim::First),
            0 => Ok(Claim::Again),
            _ => Err(StoreError::Full { store: self.shown.to_string(), max: self.max_entries }),
        }
    }

    /// Bytes kept (entries whose expiry passed are counted until the next put).
    pub(crate) async fn bytes(&self) -> Result<usize, StoreError> {
        let mut connection = self.connection.clone();
        let key = format!("{PREFIX}:bytes");
        let bytes = self
            .bounded(
                async move { redis::cmd("GET").arg(key).query_async::<Option<i64>>(&mut connection).await },
            )
            .await?;
        Ok(bytes.unwrap_or(0).max(0) as usize)
    }
}

/// `url` without the password of its user part, for messages and logs.
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        // Unparseable: the part after the last `@` only (a password never shows).
        Err(_) => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{}", host.chars().take(200).collect::<String>())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(shown_url("redis://:hunter2@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(shown_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(shown_url("redis://:hunter2@[::1"), "redis://[::1");
    }
}

//! What one incoming JSON-RPC 2.0 message is, before rmcp sees it: rmcp's own
//! reading drops a line that is not JSON, answers an unreadable message without
//! an `id` member and a request with unfit params as `Invalid request`. Here:
//!
//! - not JSON: `-32700 Parse error`, `"id": null`;
//! - JSON but no JSON-RPC 2.0 message (`42`, `{}`, `{"jsonrpc":"1.0",…}`, an
//!   `id` that is neither a string nor an integer): `-32600 Invalid Request`
//!   with the `id` when it could be read, `null` otherwise;
//! - a request whose `params` don't fit its method (`tools/call` without a
//!   string `name`, with `arguments` that are not an object, without `params`):
//!   `-32602 Invalid params` with its `id`;
//! - anything else goes to rmcp unchanged.
//!
//! A notification or response that doesn't parse gets no answer (JSON-RPC
//! never answers those); it is logged.

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest, RequestId,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// JSON-RPC 2.0: the message is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: JSON, but not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: the method's parameters are invalid.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What to do with one incoming message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A message rmcp reads: here it is, already rmcp's own type.
    Forward(Box<ClientJsonRpcMessage>),
    /// Answer with this error response; rmcp never sees the message.
    Answer(Value),
    /// Drop it (a notification or response that does not parse): why.
    Drop(String),
}

/// What to say when a message that passed the checks still isn't one of rmcp's.
enum Unfit {
    /// A request: `-32602` with its id, naming the method.
    Request { id: Value, method: String },
    /// A notification or a response: dropped.
    Other(&'static str),
}

/// An error response with `id` (`Value::Null` when it could not be read).
pub(crate) fn error_response(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The answer to a line that is not JSON: `-32700`, `"id": null`.
pub(crate) fn parse_error(why: &serde_json::Error) -> Value {
    error_response(Value::Null, PARSE_ERROR, format!("Parse error: {why}"))
}

/// Decide what to do with `message`, one parsed JSON value (a batch's members
/// are decided one by one); a message for rmcp is converted to rmcp's type
/// here, once (the value is moved, not copied).
pub(crate) fn classify(message: Value) -> Incoming {
    let unfit = match check(&message) {
        Ok(unfit) => unfit,
        Err(answer) => return Incoming::Answer(answer),
    };
    if let Some(call) = tools_call(&message) {
        return Incoming::Forward(Box::new(call));
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(message) {
        Ok(message) => Incoming::Forward(Box::new(message)),
        Err(e) => match unfit {
            Unfit::Request { id, method } => Incoming::Answer(error_response(
                id,
                INVALID_PARAMS,
                format!("Invalid params for {method}: {e}"),
            )),
            Unfit::Other(what) => Incoming::Drop(format!("unreadable {what}: {e}")),
        },
    }
}

/// A checked `tools/call` request read straight into rmcp's type. rmcp's
/// `ClientRequest` is an untagged union of some twenty requests, tried in
/// turn on a buffered copy of the message: thirteen fail before `tools/call`,
/// the message nearly every line of a session carries. `None` (anything
/// else, or a call rmcp's own reading must judge) takes the general path,
/// which gives the same message and the same errors.
fn tools_call(message: &Value) -> Option<ClientJsonRpcMessage> {
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let id = RequestId::deserialize(message.get("id")?).ok()?;
    let request = CallToolRequest::deserialize(message).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(id, ClientRequest::CallToolRequest(request))))
}

/// The error response `message` gets before rmcp could read it, or what to
/// say if rmcp can't.
fn check(message: &Value) -> Result<Unfit, Value> {
    let Some(object) = message.as_object() else {
        return Err(error_response(Value::Null, INVALID_REQUEST, "Invalid Request: not an object"));
    };
    let id = object.get("id");
    let readable_id = id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()).cloned();
    let invalid = |why: &str| {
        Err(error_response(
            readable_id.clone().unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    if id.is_some() && readable_id.is_none() {
        return invalid("\"id\" must be a string or an integer");
    }
    let Some(method) = object.get("method") else {
        // A response (to a request of the server's, such as elicitation).
        if id.is_none() || object.contains_key("result") == object.contains_key("error") {
            return invalid("a response needs an \"id\" and one of \"result\" or \"error\"");
        }
        return Ok(Unfit::Other("response"));
    };
    let Some(method) = method.as_str() else {
        return invalid("\"method\" must be a string");
    };
    let Some(id) = readable_id else {
        return Ok(Unfit::Other("notification"));
    };
    if let Some(why) = params_problem(method, object.get("params")) {
        return Err(error_response(id, INVALID_PARAMS, format!("Invalid params: {why}")));
    }
    Ok(Unfit::Request { id, method: method.to_owned() })
}

/// Why `params` do not fit `method`, or `None`.
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    match params {
        None | Some(Value::Object(_)) => {}
        Some(other) => return Some(format!("\"params\" must be an object, not {}", kind(other))),
    }
    if method != "tools/call" {
        return None;
    }
    let Some(params) = params else {
        return Some("tools/call needs \"params\" with the tool's \"name\"".into());
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        Some(other) => return Some(format!("\"name\" must be a string, not {}", kind(other))),
        None => return Some("tools/call needs the tool's \"name\"".into()),
    }
    match params.get("arguments") {
        None | Some(Value::Object(_)) => None,
        Some(other) => Some(format!("\"arguments\" must be an object, not {}", kind(other))),
    }
}

/// The JSON type of `value`, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(message: Value) -> Value {
        match classify(message.clone()) {
            Incoming::Answer(answer) => answer,
            other => panic!("{message} was not answered: {other:?}"),
        }
    }

    #[test]
    fn unreadable_messages_are_invalid_requests_with_a_null_id() {
        for message in
            [json!(42), json!({}), json!([]), json!("x"), json!({"jsonrpc": "2.0", "id": {"a": 1}})]
        {
            let reply = answer(message.clone());
            assert_eq!((&reply["id"], &reply["error"]["code"]), (&Value::Null, &json!(-32600)), "{message}");
        }
        let old = answer(json!({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}));
        assert_eq!((&old["id"], &old["error"]["code"]), (&json!(3), &json!(-32600)));
        let bad_method = answer(json!({"jsonrpc": "2.0", "id": "a", "method": 7}));
        assert_eq!((&bad_method["id"], &bad_method["error"]["code"]), (&json!("a"), &json!(-32600)));
    }

    #[test]
    fn unfit_tools_call_params_are_invalid_params() {
        for params in [
            None,
            Some(json!("read_file")),
            Some(json!({})),
            Some(json!({"name": 5})),
            Some(json!({"name": "read_file", "arguments": "path=x"})),
            Some(json!({"name": "read_file", "arguments": ["x"]})),
            Some(json!({"name": "read_file", "arguments": 1})),
        ] {
            let mut message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call"});
            if let Some(params) = &params {
                message["params"] = params.clone();
            }
            let reply = answer(message);
            assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(9), &json!(-32602)), "{params:?}");
        }
        let list = answer(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1]}));
        assert_eq!(list["error"]["code"], -32602);
    }

    #[test]
    fn well_formed_messages_go_to_rmcp() {
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "noop"}}),
            json!({"jsonrpc": "2.0", "id": "x", "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
        ] {
            assert!(matches!(classify(message.clone()), Incoming::Forward(_)), "{message}");
        }
        let odd = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5});
        assert!(matches!(classify(odd), Incoming::Drop(_)));
    }

    #[test]
    fn the_tools_call_shortcut_reads_what_the_general_path_reads() {
        let params = json!({"name": "read_file", "arguments": {"path": "f.txt"},
                            "_meta": {"progressToken": "p-1"}});
        for id in [json!(7), json!("s-7")] {
            let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
            let fast = tools_call(&message).expect("a tools/call is read by the shortcut");
            let general: ClientJsonRpcMessage = serde_json::from_value(message.clone()).unwrap();
            assert_eq!(serde_json::to_value(&fast).unwrap(), serde_json::to_value(&general).unwrap());
            assert_eq!(serde_json::to_value(&fast).unwrap(), message, "nothing lost, nothing added");
            let JsonRpcMessage::Request(request) = fast else { panic!("a request") };
            let ClientRequest::CallToolRequest(call) = request.request else { panic!("a tools/call") };
            assert_eq!(call.params.name, "read_file");
        }
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(tools_call(&list).is_none(), "anything else takes the general path");
        let odd = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5});
        assert!(matches!(classify(odd), Incoming::Drop(_)));
    }
}

//! A blocking JSON-RPC client over HTTP (ureq), with an optional JWT: what `test-rpc` and the
//! `--dev` consensus driver talk to the node with.

use serde_json::Value;

/// POSTs `body`, with `Authorization: Bearer <jwt>` when given; the answer as JSON.
pub(crate) fn post_with(url: &str, body: &str, jwt: Option<&str>) -> Result<Value, String> {
    let mut request = ureq::post(url).header("Content-Type", "application/json");
    if let Some(jwt) = jwt {
        request = request.header("Authorization", &format!("Bearer {jwt}"));
    }
    let mut response = request
        .config()
        .http_status_as_error(false)
        .build()
        .send(body)
        .map_err(|e| format!("POST {url}: {e}"))?;
    let text = response.body_mut().read_to_string().map_err(|e| format!("read body: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("response is not JSON ({e}): {text}"))
}

//! Engine API authentication: a JWT (HS256) in the `Authorization: Bearer` header of every
//! request, signed with the 32-byte secret the consensus client shares, its `iat` claim within
//! ±60 s of the node's clock (execution-apis `src/engine/authentication.md`). Other algorithms,
//! `alg: none` included, are refused.

use crate::RpcError;
use jsonrpsee::server::{HttpBody, HttpResponse};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::{
    path::Path,
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};
use tower_http::validate_request::ValidateRequest;

/// How far a token's `iat` may be from the node's clock (seconds).
pub const IAT_WINDOW_SECS: u64 = 60;

/// The shared 32-byte JWT secret.
#[derive(Clone, PartialEq, Eq)]
pub struct JwtSecret([u8; 32]);

impl std::fmt::Debug for JwtSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtSecret(..)")
    }
}

#[derive(Serialize, Deserialize)]
struct Claims {
    iat: u64,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl JwtSecret {
    /// Parses 64 hex digits, with or without `0x` (the `jwt.hex` file format).
    ///
    /// # Errors
    /// [`RpcError::InvalidParams`] for anything else.
    pub fn from_hex(s: &str) -> Result<Self, RpcError> {
        let s = s.trim();
        let hex = s.strip_prefix("0x").unwrap_or(s);
        let bytes = alloy_primitives::hex::decode(hex)
            .map_err(|e| RpcError::InvalidParams(format!("JWT secret: {e}")))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
            RpcError::InvalidParams(format!("JWT secret of {} bytes, want 32", b.len()))
        })?;
        Ok(Self(bytes))
    }

    /// A fresh random secret (the operating system's generator).
    ///
    /// # Errors
    /// [`RpcError::Random`] when the generator fails.
    pub fn random() -> Result<Self, RpcError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// Reads the secret at `path`, or creates a random one there (hex, as reth and geth write
    /// `jwt.hex`) when the file does not exist.
    ///
    /// # Errors
    /// [`RpcError::JwtFile`] when the file cannot be read or written; [`RpcError::InvalidParams`]
    /// when it does not hold 32 hex bytes.
    pub fn load_or_create(path: &Path) -> Result<Self, RpcError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_hex(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret = Self::random()?;
                std::fs::write(path, secret.to_hex())
                    .map_err(|source| RpcError::JwtFile { path: path.to_path_buf(), source })?;
                Ok(secret)
            }
            Err(source) => Err(RpcError::JwtFile { path: path.to_path_buf(), source }),
        }
    }

    /// The secret as `0x` and 64 hex digits.
    pub fn to_hex(&self) -> String {
        format!("0x{}", alloy_primitives::hex::encode(self.0))
    }

    /// A token issued at `iat` (seconds since the epoch), as a consensus client sends it.
    pub fn token_at(&self, iat: u64) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &Claims { iat },
            &EncodingKey::from_secret(&self.0),
        )
        .expect("HS256 signing of a small claim set cannot fail")
    }

    /// A token issued now.
    pub fn token(&self) -> String {
        self.token_at(now())
    }

    /// Checks a token: HS256 with this secret, `iat` within ±[`IAT_WINDOW_SECS`] of `now`.
    ///
    /// # Errors
    /// [`JwtError`], whose message is the 401 answer's body.
    pub fn validate(&self, token: &str, now: u64) -> Result<(), JwtError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let data =
            jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(&self.0), &validation)
                .map_err(JwtError::Invalid)?;
        if data.claims.iat.abs_diff(now) > IAT_WINDOW_SECS {
            return Err(JwtError::Stale { iat: data.claims.iat, now });
        }
        Ok(())
    }
}

/// Why the Engine API refused a request's JWT (Engine API spec, authentication: HS256, `iat`
/// within ±[`IAT_WINDOW_SECS`] seconds).
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    /// No `Authorization: Bearer <JWT>` header.
    #[error("missing Authorization: Bearer <JWT>")]
    Missing,
    /// The token does not decode, is not HS256, or its signature does not match the secret.
    #[error("invalid JWT: {0}")]
    Invalid(jsonwebtoken::errors::Error),
    /// `iat` is too far from the node's clock.
    #[error("JWT iat {iat} is more than {IAT_WINDOW_SECS} s from the node's clock {now}")]
    Stale {
        /// The token's issued-at time (seconds since the Unix epoch).
        iat: u64,
        /// The node's clock (seconds since the Unix epoch).
        now: u64,
    },
}

/// tower-http request validator refusing, with 401, every request without a valid JWT.
#[derive(Debug, Clone)]
pub struct JwtValidator {
    secret: Arc<JwtSecret>,
}

impl JwtValidator {
    /// A validator for `secret`.
    pub fn new(secret: JwtSecret) -> Self {
        Self { secret: Arc::new(secret) }
    }
}

impl<B> ValidateRequest<B> for JwtValidator {
    type ResponseBody = HttpBody;

    fn validate(&mut self, request: &mut http::Request<B>) -> Result<(), HttpResponse> {
        let header = request.headers().get(http::header::AUTHORIZATION);
        let token = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or(JwtError::Missing);
        match token.and_then(|t| self.secret.validate(t, now())) {
            Ok(()) => Ok(()),
            Err(reason) => Err(http::Response::builder()
                .status(http::StatusCode::UNAUTHORIZED)
                .body(HttpBody::from(reason.to_string()))
                .expect("static response parts")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_for_secret_algorithm_and_time() {
        let secret = JwtSecret::from_hex(&"11".repeat(32)).unwrap();
        let t = 1_700_000_000;
        assert!(secret.validate(&secret.token_at(t), t).is_ok());
        assert!(secret.validate(&secret.token_at(t - 60), t).is_ok());
        assert!(secret.validate(&secret.token_at(t + 60), t).is_ok());
        assert!(matches!(
            secret.validate(&secret.token_at(t - 61), t),
            Err(JwtError::Stale { iat, now }) if iat == t - 61 && now == t
        ));
        assert!(secret.validate(&secret.token_at(t + 61), t).is_err());
        let other = JwtSecret::from_hex(&"22".repeat(32)).unwrap();
        assert!(secret.validate(&other.token_at(t), t).is_err());
        // alg: none, unsigned: {"alg":"none","typ":"JWT"}.{"iat":t}.
        let b64 = |s: &str| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
        };
        let none = format!(
            "{}.{}.",
            b64(r#"{"alg":"none","typ":"JWT"}"#),
            b64(&format!(r#"{{"iat":{t}}}"#))
        );
        assert!(secret.validate(&none, t).is_err());
        // HS512 with the right secret is not HS256.
        let hs512 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &Claims { iat: t },
            &EncodingKey::from_secret(&secret.0),
        )
        .unwrap();
        assert!(secret.validate(&hs512, t).is_err());
        assert!(JwtSecret::from_hex("0x1234").is_err());
        assert_eq!(JwtSecret::from_hex(&secret.to_hex()).unwrap(), secret);
    }
}

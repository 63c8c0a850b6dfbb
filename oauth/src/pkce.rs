//! PKCE (RFC 7636) with `S256`, and the `state` value, from secrets the machine derives
//! from its seed: it reads no RNG itself.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use sha2::{Digest, Sha256};

/// Secret values derived from a seed: `SHA-256(seed ‖ counter ‖ label)`, the counter never
/// repeating. As unpredictable as the seed, which must come from the operating system's
/// random source and be used by one machine only.
pub(crate) struct Secrets {
    seed: [u8; 32],
    counter: u64,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("seed", &"<redacted>")
            .field("counter", &self.counter)
            .finish()
    }
}

impl Secrets {
    pub(crate) fn new(seed: [u8; 32]) -> Secrets {
        Secrets { seed, counter: 0 }
    }

    /// 32 fresh secret bytes for `label`.
    pub(crate) fn next(&mut self, label: &[u8]) -> [u8; 32] {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(self.counter.to_le_bytes());
        h.update(label);
        h.finalize().into()
    }

    /// A fresh PKCE pair.
    pub(crate) fn pkce(&mut self) -> Pkce {
        Pkce::from_bytes(&self.next(b"pkce"))
    }

    /// A fresh `state` value (128 bits, base64url).
    pub(crate) fn state(&mut self) -> String {
        URL_SAFE_NO_PAD.encode(&self.next(b"state")[..16])
    }
}

/// A PKCE code verifier and its `S256` challenge.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// `code_verifier`: 43 characters of base64url (RFC 7636 §4.1).
    pub verifier: String,
    /// `code_challenge`: `BASE64URL(SHA256(verifier))` (RFC 7636 §4.2).
    pub challenge: String,
}

impl Pkce {
    /// The pair whose verifier is the base64url of `bytes` (32 random bytes, as RFC 7636
    /// §4.1 recommends).
    pub fn from_bytes(bytes: &[u8; 32]) -> Pkce {
        Pkce::from_verifier(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The pair for `verifier`.
    pub fn from_verifier(verifier: String) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &"<redacted>")
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// HTTP Basic credentials for a client (RFC 6749 §2.3.1: id and secret form-encoded first).
pub(crate) fn basic(client_id: &str, secret: &str) -> String {
    let pair = format!(
        "{}:{}",
        crate::http::form_encode(client_id),
        crate::http::form_encode(secret)
    );
    format!("Basic {}", STANDARD.encode(pair))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        // The octets of RFC 7636 appendix B, their verifier and its S256 challenge.
        let octets = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        let pkce = Pkce::from_bytes(&octets);
        assert_eq!(pkce.verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn secrets_differ_and_repeat_with_the_seed() {
        let mut a = Secrets::new([7; 32]);
        let mut b = Secrets::new([7; 32]);
        let (p1, p2) = (a.pkce(), a.pkce());
        assert_ne!(p1, p2);
        assert_eq!(b.pkce(), p1);
        assert_eq!(p1.verifier.len(), 43);
        assert_eq!(a.state().len(), 22);
        assert_ne!(Secrets::new([8; 32]).pkce(), p1);
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        // RFC 6749 §2.3.1 encodes id and secret as form values, then base64.
        assert_eq!(
            basic("a b", "p:w"),
            format!("Basic {}", STANDARD.encode("a+b:p%3Aw"))
        );
        // RFC 7617's example pair, its space form-encoded as `+`.
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuK3Nlc2FtZQ=="
        );
    }
}

//! Injected randomness: ids, retry epochs, verification codes and tokens all come from here,
//! so tests can make them deterministic.

use std::sync::Mutex;

/// A source of random bytes.
pub trait Entropy: Send + Sync {
    fn fill(&self, bytes: &mut [u8]);

    fn bytes16(&self) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        self.fill(&mut bytes);
        bytes
    }
}

/// The operating system's randomness.
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, bytes: &mut [u8]) {
        // Tokens and ids must not be guessable: without the OS source there is nothing safe
        // to hand out, so this fails closed (the call fails) rather than using the clock.
        // `Broker::start` checks the source first, so a Lomi without one does not start.
        if let Err(error) = getrandom::fill(bytes) {
            panic!("the operating system's randomness is not available: {error}");
        }
    }
}

/// A deterministic sequence for tests (xorshift; not for secrets).
pub struct SeededEntropy(Mutex<u64>);

impl SeededEntropy {
    pub fn new(seed: u64) -> Self {
        SeededEntropy(Mutex::new(seed.max(1)))
    }
}

impl Entropy for SeededEntropy {
    fn fill(&self, bytes: &mut [u8]) {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for b in bytes.iter_mut() {
            let mut x = *state;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *state = x;
            *b = x as u8;
        }
    }
}

/// Letters and digits a person can read aloud without confusion (no 0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// A short verification code such as `K7Q-4MZ`.
pub fn verification_code(entropy: &dyn Entropy) -> String {
    let mut bytes = [0u8; 6];
    entropy.fill(&mut bytes);
    let letters: Vec<char> = bytes
        .iter()
        .map(|b| CODE_ALPHABET[*b as usize % CODE_ALPHABET.len()] as char)
        .collect();
    format!(
        "{}-{}",
        letters[..3].iter().collect::<String>(),
        letters[3..].iter().collect::<String>()
    )
}

/// A bearer token for a pairing created ahead by the person: 32 random bytes.
pub fn bearer_token(entropy: &dyn Entropy) -> String {
    let mut bytes = [0u8; 32];
    entropy.fill(&mut bytes);
    format!("lomi_{}", hex::encode(bytes))
}

/// How a secret is kept: only its SHA-256.
pub fn secret_hash(secret: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(secret.as_bytes()))
}

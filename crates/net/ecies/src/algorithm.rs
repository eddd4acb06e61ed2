//! The ECIES handshake of RLPx (devp2p `rlpx.md`, EIP-8) and the frame cipher it keys.
//!
//! Flow: the initiator sends `auth` — `[signature, its static public key, nonce, 4]`, the
//! signature by a fresh ephemeral key over `ecdh(static keys) ^ nonce` —, ECIES-encrypted to
//! the recipient's static key and prefixed with its 2-byte size (which is also the MAC's shared
//! data). The recipient recovers the initiator's ephemeral key from the signature and answers
//! `ack` — `[its ephemeral public key, nonce, 4]` — encrypted the same way. Both sides then
//! derive, from the ephemeral ECDH secret and the two nonces, the AES-256-CTR frame key and the
//! MAC secret, and seed each direction's MAC with the nonce of the other side and the packet it
//! sent. Any RLP elements after the version and the random padding after the list are
//! ignored, as EIP-8 asks.

use crate::{mac::Mac, EciesError, PeerId};
use aes::{
    cipher::{KeyIvInit, StreamCipher},
    Aes128, Aes256,
};
use alloy_primitives::{keccak256, B128, B256, B512};
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader};
use hmac::{Hmac, Mac as _};
use k256::{
    ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey},
    elliptic_curve::sec1::ToEncodedPoint,
    PublicKey, SecretKey,
};
use sha2::{Digest, Sha256};

type Aes128Ctr = ctr::Ctr128BE<Aes128>;
/// The frame cipher: AES-256 in counter mode from a zero IV, one keystream per direction.
pub(crate) type Aes256Ctr = ctr::Ctr128BE<Aes256>;

/// Bytes ECIES adds to a message: the ephemeral public key (65), the IV (16), the HMAC (32).
pub const ECIES_OVERHEAD: usize = 65 + 16 + 32;
/// The handshake version the auth and ack messages carry.
const HANDSHAKE_VERSION: u8 = 4;

/// A fresh random secp256k1 secret key.
pub fn random_secret_key() -> SecretKey {
    loop {
        if let Ok(key) = SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
            return key;
        }
    }
}

/// The node id of `key`'s public key: its uncompressed point without the `0x04` prefix.
pub fn peer_id(key: &PublicKey) -> PeerId {
    B512::from_slice(&key.to_encoded_point(false).as_bytes()[1..])
}

/// The public key of node id `id`.
///
/// # Errors
/// [`EciesError::InvalidPublicKey`] when `id` is not a point of the curve.
pub fn public_key(id: &PeerId) -> Result<PublicKey, EciesError> {
    let mut sec1 = [0u8; 65];
    sec1[0] = 4;
    sec1[1..].copy_from_slice(id.as_slice());
    PublicKey::from_sec1_bytes(&sec1).map_err(|_| EciesError::InvalidPublicKey)
}

/// The x coordinate of `secret · public`.
fn ecdh(secret: &SecretKey, public: &PublicKey) -> B256 {
    let shared = k256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), public.as_affine());
    B256::from_slice(shared.raw_secret_bytes())
}

/// NIST SP 800-56 concatenation KDF with SHA-256, 32 bytes of output (one round).
fn kdf(secret: &B256) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(1u32.to_be_bytes());
    h.update(secret);
    h.finalize().into()
}

/// `data` ECIES-encrypted to `to`: `R ‖ iv ‖ AES-128-CTR(m) ‖ HMAC-SHA256(iv ‖ c ‖ mac_data)`.
pub(crate) fn encrypt(to: &PublicKey, data: &[u8], mac_data: &[u8]) -> Vec<u8> {
    let ephemeral = random_secret_key();
    let key = kdf(&ecdh(&ephemeral, to));
    let (enc_key, mac_key) = (&key[..16], Sha256::digest(&key[16..]));
    let iv: [u8; 16] = rand::random();
    let mut out = Vec::with_capacity(ECIES_OVERHEAD + data.len());
    out.extend_from_slice(ephemeral.public_key().to_encoded_point(false).as_bytes());
    out.extend_from_slice(&iv);
    let start = out.len();
    out.extend_from_slice(data);
    Aes128Ctr::new(enc_key.into(), (&iv).into()).apply_keystream(&mut out[start..]);
    let mut hmac = Hmac::<Sha256>::new_from_slice(&mac_key).expect("any key length");
    hmac.update(&out[65..]);
    hmac.update(mac_data);
    out.extend_from_slice(&hmac.finalize().into_bytes());
    out
}

/// The plaintext of `packet`, ECIES-encrypted to `secret`'s public key with `mac_data`.
///
/// # Errors
/// [`EciesError::ShortCiphertext`], [`EciesError::InvalidPublicKey`],
/// [`EciesError::BadEciesMac`].
pub(crate) fn decrypt(
    secret: &SecretKey,
    packet: &[u8],
    mac_data: &[u8],
) -> Result<Vec<u8>, EciesError> {
    if packet.len() < ECIES_OVERHEAD {
        return Err(EciesError::ShortCiphertext(packet.len()));
    }
    let ephemeral =
        PublicKey::from_sec1_bytes(&packet[..65]).map_err(|_| EciesError::InvalidPublicKey)?;
    let key = kdf(&ecdh(secret, &ephemeral));
    let (enc_key, mac_key) = (&key[..16], Sha256::digest(&key[16..]));
    let (body, tag) = packet.split_at(packet.len() - 32);
    let mut hmac = Hmac::<Sha256>::new_from_slice(&mac_key).expect("any key length");
    hmac.update(&body[65..]);
    hmac.update(mac_data);
    hmac.verify_slice(tag).map_err(|_| EciesError::BadEciesMac)?;
    let iv: [u8; 16] = body[65..81].try_into().expect("16 bytes");
    let mut plain = body[81..].to_vec();
    Aes128Ctr::new(enc_key.into(), (&iv).into()).apply_keystream(&mut plain);
    Ok(plain)
}

/// A handshake packet's 2-byte size prefix (the ECIES MAC data) and the rest.
///
/// # Errors
/// [`EciesError::ShortCiphertext`] for fewer than 2 bytes.
fn split_prefix(packet: &[u8]) -> Result<(&[u8], &[u8]), EciesError> {
    if packet.len() < 2 {
        return Err(EciesError::ShortCiphertext(packet.len()));
    }
    Ok(packet.split_at(2))
}

/// Seals a handshake message whose RLP list holds the encoded `items`: the list, random
/// padding (100–199 bytes, as geth), the 2-byte size prefix, ECIES to `to` with the prefix as
/// MAC data. Returns the whole packet, prefix included.
fn seal(to: &PublicKey, items: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(items.len() + 3 + 200);
    RlpHeader { list: true, payload_length: items.len() }.encode(&mut body);
    body.extend_from_slice(items);
    let padding = 100 + usize::from(rand::random::<u8>() % 100);
    body.extend((0..padding).map(|_| rand::random::<u8>()));
    let size = u16::try_from(body.len() + ECIES_OVERHEAD).expect("a handshake body is small");
    let prefix = size.to_be_bytes();
    let mut packet = prefix.to_vec();
    packet.extend(encrypt(to, &body, &prefix));
    packet
}

/// The RLP list at the start of `body`, its items decoded by `f`; elements after those `f`
/// reads and bytes after the list are ignored (EIP-8).
fn decode_list<T>(
    message: &'static str,
    body: &[u8],
    f: impl FnOnce(&mut &[u8]) -> alloy_rlp::Result<T>,
) -> Result<T, EciesError> {
    let malformed = |source| EciesError::MalformedHandshake { message, source };
    let mut buf = body;
    let header = RlpHeader::decode(&mut buf).map_err(malformed)?;
    if !header.list {
        return Err(malformed(alloy_rlp::Error::UnexpectedString));
    }
    if buf.len() < header.payload_length {
        return Err(malformed(alloy_rlp::Error::InputTooShort));
    }
    let mut items = &buf[..header.payload_length];
    f(&mut items).map_err(malformed)
}

/// One side of an RLPx handshake, and the secrets it ends with.
#[derive(Debug)]
pub struct Handshake {
    secret: SecretKey,
    ephemeral: SecretKey,
    nonce: B256,
    remote: Option<PublicKey>,
    remote_ephemeral: Option<PublicKey>,
    remote_nonce: Option<B256>,
    /// The auth packet (sent by the initiator, received by the recipient), prefix included.
    auth: Option<Vec<u8>>,
    /// The ack packet, prefix included.
    ack: Option<Vec<u8>>,
    initiator: bool,
}

impl Handshake {
    /// The initiator's side, dialing the node whose id is `remote`.
    ///
    /// # Errors
    /// [`EciesError::InvalidPublicKey`] when `remote` is not a point of the curve.
    pub fn initiator(secret: SecretKey, remote: &PeerId) -> Result<Self, EciesError> {
        let remote = public_key(remote)?;
        Ok(Self { remote: Some(remote), ..Self::new(secret, true) })
    }

    /// The recipient's side of an incoming connection.
    pub fn recipient(secret: SecretKey) -> Self {
        Self::new(secret, false)
    }

    fn new(secret: SecretKey, initiator: bool) -> Self {
        Self {
            secret,
            ephemeral: random_secret_key(),
            nonce: B256::from(rand::random::<[u8; 32]>()),
            remote: None,
            remote_ephemeral: None,
            remote_nonce: None,
            auth: None,
            ack: None,
            initiator,
        }
    }

    /// The remote node's id, once known (from the start when dialing, from its auth when
    /// answering).
    pub fn remote_id(&self) -> Option<PeerId> {
        self.remote.as_ref().map(peer_id)
    }

    /// The initiator's auth packet (EIP-8), to be sent as it is.
    pub fn auth(&mut self) -> Vec<u8> {
        let remote = self.remote.expect("the initiator knows whom it dials");
        let token = ecdh(&self.secret, &remote) ^ self.nonce;
        let (signature, recovery) = SigningKey::from(&self.ephemeral)
            .sign_prehash_recoverable(token.as_slice())
            .expect("a 32-byte prehash signs");
        let mut sig = [0u8; 65];
        sig[..64].copy_from_slice(&signature.to_bytes());
        sig[64] = recovery.to_byte();
        let id = peer_id(&self.secret.public_key());
        let mut items = Vec::new();
        sig.as_slice().encode(&mut items);
        id.encode(&mut items);
        self.nonce.encode(&mut items);
        HANDSHAKE_VERSION.encode(&mut items);
        let packet = seal(&remote, &items);
        self.auth = Some(packet.clone());
        packet
    }

    /// Reads the initiator's auth `packet` (prefix included) on the recipient's side.
    ///
    /// # Errors
    /// A malformed, undecryptable or wrongly signed auth.
    pub fn read_auth(&mut self, packet: &[u8]) -> Result<(), EciesError> {
        let (prefix, packet_body) = split_prefix(packet)?;
        let body = decrypt(&self.secret, packet_body, prefix)?;
        let (sig, id, nonce) = decode_list("auth", &body, |items| {
            let sig = alloy_rlp::Bytes::decode(items)?;
            let id = B512::decode(items)?;
            let nonce = B256::decode(items)?;
            Ok((sig, id, nonce))
        })?;
        if sig.len() != 65 {
            return Err(EciesError::InvalidSignature);
        }
        let remote = public_key(&id)?;
        let token = ecdh(&self.secret, &remote) ^ nonce;
        let signature =
            Signature::from_slice(&sig[..64]).map_err(|_| EciesError::InvalidSignature)?;
        let recovery = RecoveryId::from_byte(sig[64]).ok_or(EciesError::InvalidSignature)?;
        let ephemeral = VerifyingKey::recover_from_prehash(token.as_slice(), &signature, recovery)
            .map_err(|_| EciesError::InvalidSignature)?;
        self.remote = Some(remote);
        self.remote_ephemeral = Some(PublicKey::from(&ephemeral));
        self.remote_nonce = Some(nonce);
        self.auth = Some(packet.to_vec());
        Ok(())
    }

    /// The recipient's ack packet, after [`Handshake::read_auth`].
    pub fn ack(&mut self) -> Vec<u8> {
        let remote = self.remote.expect("the auth was read");
        let mut items = Vec::new();
        peer_id(&self.ephemeral.public_key()).encode(&mut items);
        self.nonce.encode(&mut items);
        HANDSHAKE_VERSION.encode(&mut items);
        let packet = seal(&remote, &items);
        self.ack = Some(packet.clone());
        packet
    }

    /// Reads the recipient's ack `packet` (prefix included) on the initiator's side.
    ///
    /// # Errors
    /// A malformed or undecryptable ack.
    pub fn read_ack(&mut self, packet: &[u8]) -> Result<(), EciesError> {
        let (prefix, packet_body) = split_prefix(packet)?;
        let body = decrypt(&self.secret, packet_body, prefix)?;
        let (ephemeral, nonce) =
            decode_list("ack", &body, |items| Ok((B512::decode(items)?, B256::decode(items)?)))?;
        self.remote_ephemeral = Some(public_key(&ephemeral)?);
        self.remote_nonce = Some(nonce);
        self.ack = Some(packet.to_vec());
        Ok(())
    }

    /// The session's secrets, once both packets went through.
    ///
    /// # Errors
    /// [`EciesError::UnexpectedMessage`] before the handshake ended.
    pub fn secrets(&self) -> Result<Secrets, EciesError> {
        let (Some(remote_ephemeral), Some(remote_nonce), Some(auth), Some(ack)) =
            (&self.remote_ephemeral, self.remote_nonce, &self.auth, &self.ack)
        else {
            return Err(EciesError::UnexpectedMessage("secrets before the handshake ended"));
        };
        let (initiator_nonce, recipient_nonce) =
            if self.initiator { (self.nonce, remote_nonce) } else { (remote_nonce, self.nonce) };
        let ephemeral_key = ecdh(&self.ephemeral, remote_ephemeral);
        let nonces = keccak256([recipient_nonce.as_slice(), initiator_nonce.as_slice()].concat());
        let shared = keccak256([ephemeral_key.as_slice(), nonces.as_slice()].concat());
        let aes = keccak256([ephemeral_key.as_slice(), shared.as_slice()].concat());
        let mac = keccak256([ephemeral_key.as_slice(), aes.as_slice()].concat());
        // egress: (mac ^ the remote's nonce) ‖ the packet this side sent; ingress: the other.
        let (sent, received) = if self.initiator { (auth, ack) } else { (ack, auth) };
        let mut egress = Mac::new(mac);
        egress.update((mac ^ remote_nonce).as_slice());
        egress.update(sent);
        let mut ingress = Mac::new(mac);
        ingress.update((mac ^ self.nonce).as_slice());
        ingress.update(received);
        Ok(Secrets { aes, mac, egress, ingress })
    }
}

/// The keys of an established session: the frame key and each direction's MAC.
#[derive(Debug, Clone)]
pub struct Secrets {
    aes: B256,
    mac: B256,
    egress: Mac,
    ingress: Mac,
}

impl Secrets {
    /// The AES-256 frame key (`aes-secret`).
    pub fn aes_secret(&self) -> B256 {
        self.aes
    }

    /// The MAC key (`mac-secret`).
    pub fn mac_secret(&self) -> B256 {
        self.mac
    }
}

/// Frame encryption and decryption for one session ([`Secrets`] in use).
pub(crate) struct FrameCipher {
    egress_aes: Aes256Ctr,
    ingress_aes: Aes256Ctr,
    egress_mac: Mac,
    ingress_mac: Mac,
}

impl std::fmt::Debug for FrameCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameCipher")
    }
}

/// The header data every frame carries: `[capability-id = 0, context-id = 0]`.
const ZERO_HEADER: [u8; 3] = [0xc2, 0x80, 0x80];

impl FrameCipher {
    pub(crate) fn new(secrets: Secrets) -> Self {
        let iv = [0u8; 16];
        Self {
            egress_aes: Aes256Ctr::new(secrets.aes.as_slice().into(), (&iv).into()),
            ingress_aes: Aes256Ctr::new(secrets.aes.as_slice().into(), (&iv).into()),
            egress_mac: secrets.egress,
            ingress_mac: secrets.ingress,
        }
    }

    /// `data` as one frame: header ‖ header MAC ‖ body padded to 16 bytes ‖ frame MAC.
    pub(crate) fn seal(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let mut header = [0u8; 16];
        let size = u32::try_from(data.len()).expect("frames are below 16 MiB").to_be_bytes();
        header[..3].copy_from_slice(&size[1..]);
        header[3..6].copy_from_slice(&ZERO_HEADER);
        self.egress_aes.apply_keystream(&mut header);
        self.egress_mac.update_header(&header);
        out.extend_from_slice(&header);
        out.extend_from_slice(self.egress_mac.digest().as_slice());
        let start = out.len();
        out.extend_from_slice(data);
        out.resize(start + data.len().div_ceil(16) * 16, 0);
        self.egress_aes.apply_keystream(&mut out[start..]);
        self.egress_mac.update_body(&out[start..]);
        out.extend_from_slice(self.egress_mac.digest().as_slice());
    }

    /// Checks and decrypts a frame header (32 bytes: header ‖ MAC); returns the body's size.
    pub(crate) fn open_header(&mut self, header: &mut [u8; 32]) -> Result<usize, EciesError> {
        let (head, mac) = header.split_at_mut(16);
        let head: &mut [u8; 16] = head.try_into().expect("16 bytes");
        self.ingress_mac.update_header(head);
        if self.ingress_mac.digest() != B128::from_slice(mac) {
            return Err(EciesError::BadHeaderMac);
        }
        self.ingress_aes.apply_keystream(head);
        Ok(usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]))
    }

    /// Bytes the body of a frame of `size` takes on the wire (padding and MAC included).
    pub(crate) fn body_len(size: usize) -> usize {
        size.div_ceil(16) * 16 + 16
    }

    /// Checks and decrypts a frame body (`body_len(size)` bytes); returns its `size` bytes.
    pub(crate) fn open_body<'a>(
        &mut self,
        body: &'a mut [u8],
        size: usize,
    ) -> Result<&'a [u8], EciesError> {
        let (data, mac) = body.split_at_mut(body.len() - 16);
        self.ingress_mac.update_body(data);
        if self.ingress_mac.digest() != B128::from_slice(mac) {
            return Err(EciesError::BadFrameMac);
        }
        self.ingress_aes.apply_keystream(data);
        Ok(&data[..size])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecies_round_trip_and_tamper() {
        let key = random_secret_key();
        let packet = encrypt(&key.public_key(), b"hello rlpx", b"ad");
        assert_eq!(decrypt(&key, &packet, b"ad").unwrap(), b"hello rlpx");
        assert!(matches!(decrypt(&key, &packet, b"xx"), Err(EciesError::BadEciesMac)));
        let mut altered = packet.clone();
        altered[90] ^= 1;
        assert!(matches!(decrypt(&key, &altered, b"ad"), Err(EciesError::BadEciesMac)));
        assert!(matches!(
            decrypt(&random_secret_key(), &packet, b"ad"),
            Err(EciesError::BadEciesMac)
        ));
    }

    #[test]
    fn both_sides_derive_matching_frame_ciphers() {
        let (a_key, b_key) = (random_secret_key(), random_secret_key());
        let mut a = Handshake::initiator(a_key.clone(), &peer_id(&b_key.public_key())).unwrap();
        let mut b = Handshake::recipient(b_key);
        b.read_auth(&a.auth()).unwrap();
        assert_eq!(b.remote_id(), Some(peer_id(&a_key.public_key())));
        a.read_ack(&b.ack()).unwrap();
        let (mut a, mut b) =
            (FrameCipher::new(a.secrets().unwrap()), FrameCipher::new(b.secrets().unwrap()));
        for message in [&b"\x80\xc0"[..], &[7u8; 1000], &[]] {
            let mut frame = Vec::new();
            a.seal(message, &mut frame);
            let mut header: [u8; 32] = frame[..32].try_into().unwrap();
            let size = b.open_header(&mut header).unwrap();
            assert_eq!(size, message.len());
            assert_eq!(b.open_body(&mut frame[32..], size).unwrap(), message);
        }
        // A flipped bit in a header is caught by its MAC.
        let mut frame = Vec::new();
        a.seal(b"x", &mut frame);
        frame[3] ^= 1;
        let mut header: [u8; 32] = frame[..32].try_into().unwrap();
        assert!(matches!(b.open_header(&mut header), Err(EciesError::BadHeaderMac)));
    }

    /// geth's EIP-8 handshake vectors (`p2p/rlpx/rlpx_test.go`, `TestHandshakeForwardCompatibility`):
    /// Auth₂/Ack₂ and Auth₃/Ack₃ (version 56 with extra list elements) decrypt with the keys
    /// given there, and the recipient's secrets derived from (Auth₂, Ack₂) are geth's.
    #[test]
    fn geth_eip8_handshake_vectors() {
        let hex = |s: &str| {
            alloy_primitives::hex::decode(s.split_whitespace().collect::<String>()).unwrap()
        };
        let key = |s: &str| SecretKey::from_slice(&hex(s)).unwrap();
        let b256 = |s: &str| B256::from_slice(&hex(s));
        let key_a = key("49a7b37aa6f6645917e7b807e9d1c00d4fa71f18343b0d4122a4d2df64dd6fee");
        let key_b = key("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291");
        let eph_b = key("e238eb8e04fee6511ab04c6dd3c89ce097b11f25d584863ac2b6d5b35b1847e4");
        let nonce_a = b256("7e968bba13b6c50e2c4cd7f241cc0d64d1ac25c7f5952df231ac6a2bda8ee5d6");
        let nonce_b = b256("559aead08264d5795d3909718cdd05abd49572e84fe55590eef31a88a08fdffd");
        let eph_a = peer_id(
            &key("869d6ecf5211f1cc60418a13b9d870b22959d0c16f02bec714c960dd2298a32d").public_key(),
        );
        for auth in [AUTH2, AUTH3] {
            let mut b = Handshake::recipient(key_b.clone());
            b.read_auth(&hex(auth)).unwrap();
            assert_eq!(b.remote_id(), Some(peer_id(&key_a.public_key())));
            assert_eq!(b.remote_nonce, Some(nonce_a));
            assert_eq!(b.remote_ephemeral.as_ref().map(peer_id), Some(eph_a));
        }
        for ack in [ACK2, ACK3] {
            let mut a = Handshake::initiator(key_a.clone(), &peer_id(&key_b.public_key())).unwrap();
            a.read_ack(&hex(ack)).unwrap();
            assert_eq!(a.remote_nonce, Some(nonce_b));
            assert_eq!(
                a.remote_ephemeral.as_ref().map(peer_id),
                Some(peer_id(&eph_b.public_key()))
            );
        }
        let mut b = Handshake::recipient(key_b);
        b.ephemeral = eph_b;
        b.nonce = nonce_b;
        b.read_auth(&hex(AUTH2)).unwrap();
        b.ack = Some(hex(ACK2));
        let secrets = b.secrets().unwrap();
        assert_eq!(
            secrets.aes,
            b256("80e8632c05fed6fc2a13b0f8d31a3cf645366239170ea067065aba8e28bac487")
        );
        assert_eq!(
            secrets.mac,
            b256("2ea74ec5dae199227dff1af715362700e989d889d7a493cb0639691efb8e5f98")
        );
        let mut ingress = secrets.ingress;
        ingress.update(b"foo");
        assert_eq!(
            ingress.full_digest(),
            b256("0c7ec6340062cc46f5e9f1e3cf86f8c8c403c5a0964f5df0ebd34a75ddc86db5")
        );
    }

    const AUTH2: &str = "
        01b304ab7578555167be8154d5cc456f567d5ba302662433674222360f08d5f1534499d3678b513b
        0fca474f3a514b18e75683032eb63fccb16c156dc6eb2c0b1593f0d84ac74f6e475f1b8d56116b84
        9634a8c458705bf83a626ea0384d4d7341aae591fae42ce6bd5c850bfe0b999a694a49bbbaf3ef6c
        da61110601d3b4c02ab6c30437257a6e0117792631a4b47c1d52fc0f8f89caadeb7d02770bf999cc
        147d2df3b62e1ffb2c9d8c125a3984865356266bca11ce7d3a688663a51d82defaa8aad69da39ab6
        d5470e81ec5f2a7a47fb865ff7cca21516f9299a07b1bc63ba56c7a1a892112841ca44b6e0034dee
        70c9adabc15d76a54f443593fafdc3b27af8059703f88928e199cb122362a4b35f62386da7caad09
        c001edaeb5f8a06d2b26fb6cb93c52a9fca51853b68193916982358fe1e5369e249875bb8d0d0ec3
        6f917bc5e1eafd5896d46bd61ff23f1a863a8a8dcd54c7b109b771c8e61ec9c8908c733c0263440e
        2aa067241aaa433f0bb053c7b31a838504b148f570c0ad62837129e547678c5190341e4f1693956c
        3bf7678318e2d5b5340c9e488eefea198576344afbdf66db5f51204a6961a63ce072c8926c";

    const AUTH3: &str = "
        01b8044c6c312173685d1edd268aa95e1d495474c6959bcdd10067ba4c9013df9e40ff45f5bfd6f7
        2471f93a91b493f8e00abc4b80f682973de715d77ba3a005a242eb859f9a211d93a347fa64b597bf
        280a6b88e26299cf263b01b8dfdb712278464fd1c25840b995e84d367d743f66c0e54a586725b7bb
        f12acca27170ae3283c1073adda4b6d79f27656993aefccf16e0d0409fe07db2dc398a1b7e8ee93b
        cd181485fd332f381d6a050fba4c7641a5112ac1b0b61168d20f01b479e19adf7fdbfa0905f63352
        bfc7e23cf3357657455119d879c78d3cf8c8c06375f3f7d4861aa02a122467e069acaf513025ff19
        6641f6d2810ce493f51bee9c966b15c5043505350392b57645385a18c78f14669cc4d960446c1757
        1b7c5d725021babbcd786957f3d17089c084907bda22c2b2675b4378b114c601d858802a55345a15
        116bc61da4193996187ed70d16730e9ae6b3bb8787ebcaea1871d850997ddc08b4f4ea668fbf3740
        7ac044b55be0908ecb94d4ed172ece66fd31bfdadf2b97a8bc690163ee11f5b575a4b44e36e2bfb2
        f0fce91676fd64c7773bac6a003f481fddd0bae0a1f31aa27504e2a533af4cef3b623f4791b2cca6
        d490";

    const ACK2: &str = "
        01ea0451958701280a56482929d3b0757da8f7fbe5286784beead59d95089c217c9b917788989470
        b0e330cc6e4fb383c0340ed85fab836ec9fb8a49672712aeabbdfd1e837c1ff4cace34311cd7f4de
        05d59279e3524ab26ef753a0095637ac88f2b499b9914b5f64e143eae548a1066e14cd2f4bd7f814
        c4652f11b254f8a2d0191e2f5546fae6055694aed14d906df79ad3b407d94692694e259191cde171
        ad542fc588fa2b7333313d82a9f887332f1dfc36cea03f831cb9a23fea05b33deb999e85489e645f
        6aab1872475d488d7bd6c7c120caf28dbfc5d6833888155ed69d34dbdc39c1f299be1057810f34fb
        e754d021bfca14dc989753d61c413d261934e1a9c67ee060a25eefb54e81a4d14baff922180c395d
        3f998d70f46f6b58306f969627ae364497e73fc27f6d17ae45a413d322cb8814276be6ddd13b885b
        201b943213656cde498fa0e9ddc8e0b8f8a53824fbd82254f3e2c17e8eaea009c38b4aa0a3f306e8
        797db43c25d68e86f262e564086f59a2fc60511c42abfb3057c247a8a8fe4fb3ccbadde17514b7ac
        8000cdb6a912778426260c47f38919a91f25f4b5ffb455d6aaaf150f7e5529c100ce62d6d92826a7
        1778d809bdf60232ae21ce8a437eca8223f45ac37f6487452ce626f549b3b5fdee26afd2072e4bc7
        5833c2464c805246155289f4";

    const ACK3: &str = "
        01f004076e58aae772bb101ab1a8e64e01ee96e64857ce82b1113817c6cdd52c09d26f7b90981cd7
        ae835aeac72e1573b8a0225dd56d157a010846d888dac7464baf53f2ad4e3d584531fa203658fab0
        3a06c9fd5e35737e417bc28c1cbf5e5dfc666de7090f69c3b29754725f84f75382891c561040ea1d
        dc0d8f381ed1b9d0d4ad2a0ec021421d847820d6fa0ba66eaf58175f1b235e851c7e2124069fbc20
        2888ddb3ac4d56bcbd1b9b7eab59e78f2e2d400905050f4a92dec1c4bdf797b3fc9b2f8e84a482f3
        d800386186712dae00d5c386ec9387a5e9c9a1aca5a573ca91082c7d68421f388e79127a5177d4f8
        590237364fd348c9611fa39f78dcdceee3f390f07991b7b47e1daa3ebcb6ccc9607811cb17ce51f1
        c8c2c5098dbdd28fca547b3f58c01a424ac05f869f49c6a34672ea2cbbc558428aa1fe48bbfd6115
        8b1b735a65d99f21e70dbc020bfdface9f724a0d1fb5895db971cc81aa7608baa0920abb0a565c9c
        436e2fd13323428296c86385f2384e408a31e104670df0791d93e743a3a5194ee6b076fb6323ca59
        3011b7348c16cf58f66b9633906ba54a2ee803187344b394f75dd2e663a57b956cb830dd7a908d4f
        39a2336a61ef9fda549180d4ccde21514d117b6c6fd07a9102b5efe710a32af4eeacae2cb3b1dec0
        35b9593b48b9d3ca4c13d245d5f04169b0b1";
}

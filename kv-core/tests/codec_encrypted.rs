//! `Encrypted<C>` and `Keyring`: round trips, rotation, tamper detection, secrecy of key bytes.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::{
    Codec, ENVELOPE_VERSION, Encrypted, EncryptionKey, Json, Keyring, Text,
};
use std::sync::Arc;

const KEY_A: [u8; 32] = *b"0123456789abcdefghijklmnopqrstuv";
const KEY_B: [u8; 32] = [
    0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
    0xcc, 0xdd, 0xee, 0xff, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0x01, 0x23, 0x45, 0x67,
];

fn ring(id: &str, key: [u8; 32]) -> Keyring {
    Keyring::new(id, EncryptionKey::from_bytes(key)).unwrap()
}

#[test]
fn round_trip_through_an_inner_codec() {
    let codec = Encrypted::new(Arc::new(ring("k1", KEY_A)), Json::<Vec<u32>>::new());
    for value in [vec![], vec![1, 2, 3], (0..1000).collect()] {
        let sealed = codec.encode(&value).unwrap();
        assert_eq!(codec.decode(&sealed).unwrap(), value);
    }
}

#[test]
fn envelope_names_version_and_key_and_hides_plaintext() {
    let codec = Encrypted::new(Arc::new(ring("pool-2026", KEY_A)), Text);
    let secret = "sk-live-0000-secret".to_string();
    let sealed = codec.encode(&secret).unwrap();
    assert_eq!(sealed[0], ENVELOPE_VERSION);
    assert_eq!(usize::from(sealed[1]), "pool-2026".len());
    assert_eq!(&sealed[2..11], b"pool-2026");
    assert_eq!(sealed.len(), 2 + 9 + 12 + secret.len() + 16);
    assert!(!sealed.windows(secret.len()).any(|w| w == secret.as_bytes()));
    assert_eq!(Keyring::envelope_key_id(&sealed).unwrap(), "pool-2026");
    // A fresh nonce per value: sealing twice never gives the same bytes.
    assert_ne!(sealed, codec.encode(&secret).unwrap());
}

#[test]
fn rotation_encrypts_with_the_current_key_and_decrypts_with_any() {
    let old = ring("k1", KEY_A);
    let sealed_old = old.encrypt(b"v1").unwrap();
    let rotated = old.rotate("k2", EncryptionKey::from_bytes(KEY_B)).unwrap();
    assert_eq!(rotated.current_id(), "k2");
    assert_eq!(rotated.ids().collect::<Vec<_>>(), ["k1", "k2"]);

    let sealed_new = rotated.encrypt(b"v2").unwrap();
    assert_eq!(Keyring::envelope_key_id(&sealed_new).unwrap(), "k2");
    assert_eq!(rotated.decrypt(&sealed_old).unwrap(), b"v1");
    assert_eq!(rotated.decrypt(&sealed_new).unwrap(), b"v2");

    // With the old key dropped, old values are reported, not garbage.
    let only_new = ring("k2", KEY_B);
    assert_eq!(only_new.decrypt(&sealed_new).unwrap(), b"v2");
    let err = only_new.decrypt(&sealed_old).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert!(
        err.context()
            .iter()
            .any(|(k, v)| *k == "key_id" && v == "k1")
    );

    // A decrypt-only key added with `with_key` does not become current.
    let ring = ring("k2", KEY_B)
        .with_key("k1", EncryptionKey::from_bytes(KEY_A))
        .unwrap();
    assert_eq!(ring.current_id(), "k2");
    assert_eq!(ring.decrypt(&sealed_old).unwrap(), b"v1");
}

#[test]
fn a_key_of_the_same_id_but_other_bytes_fails_authentication() {
    let sealed = ring("k1", KEY_A).encrypt(b"value").unwrap();
    let err = ring("k1", KEY_B).decrypt(&sealed).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
}

#[test]
fn every_single_byte_change_is_detected() {
    let keyring = ring("k1", KEY_A)
        .with_key("k2", EncryptionKey::from_bytes(KEY_A))
        .unwrap();
    let sealed = keyring.encrypt(b"a value worth protecting").unwrap();
    for i in 0..sealed.len() {
        for flip in [0x01u8, 0x80] {
            let mut tampered = sealed.clone();
            tampered[i] ^= flip;
            let err = keyring.decrypt(&tampered).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "byte {i} flip {flip:#x}");
        }
    }
    // Renaming the key id to another id of the same keyring (same key bytes even) fails too:
    // the header is authenticated.
    let mut renamed = sealed.clone();
    renamed[3] = b'2';
    assert_eq!(Keyring::envelope_key_id(&renamed).unwrap(), "k2");
    assert_eq!(
        keyring.decrypt(&renamed).unwrap_err().kind(),
        ErrorKind::Codec
    );
    // Truncations and extensions.
    for len in 0..sealed.len() {
        assert_eq!(
            keyring.decrypt(&sealed[..len]).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
    let mut longer = sealed.clone();
    longer.push(0);
    assert_eq!(
        keyring.decrypt(&longer).unwrap_err().kind(),
        ErrorKind::Codec
    );
    assert_eq!(
        keyring.decrypt(&sealed).unwrap(),
        b"a value worth protecting"
    );
}

#[test]
fn bad_key_ids_and_lengths_are_config_errors() {
    for id in ["", "has space", "tab\t", "ключ", &"x".repeat(256)] {
        let err = Keyring::new(id, EncryptionKey::from_bytes(KEY_A)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{id:?}");
    }
    let dup = ring("k1", KEY_A).rotate("k1", EncryptionKey::from_bytes(KEY_B));
    assert_eq!(dup.unwrap_err().kind(), ErrorKind::Config);
    for len in [0, 16, 31, 33] {
        let err = EncryptionKey::from_slice(&vec![7; len]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }
    assert!(EncryptionKey::from_slice(&KEY_B).is_ok());
}

/// Standard base64 with padding, enough to look for a key in text.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_helper_matches_rfc_4648_vectors() {
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
}

#[test]
fn debug_output_never_shows_key_material() {
    let keyring = ring("k1", KEY_A)
        .rotate("k2", EncryptionKey::from_bytes(KEY_B))
        .unwrap();
    let codec = Encrypted::new(Arc::new(keyring.clone()), Text);
    let renderings = [
        format!("{:?}", EncryptionKey::from_bytes(KEY_A)),
        format!("{:#?}", EncryptionKey::from_bytes(KEY_B)),
        format!("{keyring:?}"),
        format!("{keyring:#?}"),
        format!("{codec:?}"),
        format!(
            "{:?}",
            ring("k1", KEY_A).decrypt(b"\x01\x02k9").unwrap_err()
        ),
    ];
    for key in [KEY_A, KEY_B] {
        let lower_hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let forbidden = [
            lower_hex.clone(),
            lower_hex.to_uppercase(),
            base64(&key),
            format!("{key:?}"),
            String::from_utf8_lossy(&key).into_owned(),
            // Any 8-byte window of the key, in hex.
            lower_hex[..16].to_string(),
            lower_hex[48..].to_string(),
        ];
        for text in &renderings {
            for bad in &forbidden {
                assert!(!text.contains(bad.as_str()), "{text} shows {bad}");
            }
        }
    }
    assert!(renderings[2].contains("k1") && renderings[2].contains("k2"));
    assert!(renderings[4].contains("Text"));
}

/// A value sealed in the first envelope format (the header alone authenticated, not bound to
/// its storage key), as earlier versions wrote it.
fn unbound(key: [u8; 32], id: &str, plaintext: &[u8]) -> Vec<u8> {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let mut out = vec![
        keyplane_core::keyspace::UNBOUND_ENVELOPE_VERSION,
        id.len() as u8,
    ];
    out.extend_from_slice(id.as_bytes());
    let nonce = [3u8; 12];
    let sealed = aes_gcm::Aes256Gcm::new(&key.into())
        .encrypt(
            aes_gcm::Nonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad: &out.clone(),
            },
        )
        .unwrap();
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

#[test]
fn unbound_values_open_only_when_accepted_and_re_encrypt_bound() {
    let key = [5u8; 32];
    let ring = ring("k1", key);
    let old = unbound(key, "k1", b"token");
    assert_eq!(Keyring::envelope_key_id(&old).unwrap(), "k1");
    assert!(!ring.is_current(&old).unwrap());
    let err = ring.decrypt_for(b"a", &old).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert!(err.to_string().contains("not bound"), "{err}");
    let accepting = ring.clone().accept_unbound(true);
    // Unbound: it opens at any key, which is what the new format forbids.
    assert_eq!(accepting.decrypt_for(b"a", &old).unwrap(), b"token");
    assert_eq!(accepting.decrypt_for(b"b", &old).unwrap(), b"token");
    let bound = accepting.encrypt_for(b"a", b"token").unwrap();
    assert!(ring.is_current(&bound).unwrap());
    assert_eq!(ring.decrypt_for(b"a", &bound).unwrap(), b"token");
    assert!(ring.decrypt_for(b"b", &bound).is_err());
    // The key is not confused with the header: an id that ends where a key begins.
    let other = Keyring::new("k1a", EncryptionKey::from_bytes(key)).unwrap();
    let sealed = other.encrypt_for(b"", b"x").unwrap();
    assert!(ring.decrypt_for(b"a", &sealed).is_err());
}

#[tokio::test]
async fn reencryption_upgrades_unbound_values_with_a_keyring_that_accepts_them() {
    use keyplane_core::keyspace::reencrypt_prefix;
    use keyplane_core::{PutOptions, Store};
    let store = keyplane_mem::MemStore::new();
    let old = unbound(KEY_A, "k1", b"token");
    store
        .put(b"p/a", &old, PutOptions::default())
        .await
        .unwrap();
    let ring = ring("k1", KEY_A);
    // Refused by default: an unbound value opens at any key.
    let err = ring.decrypt_for(b"p/a", &old).unwrap_err();
    assert!(err.to_string().contains("not bound"), "{err}");
    let err = reencrypt_prefix(&store, &ring, b"p/").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    assert!(err.to_string().contains("p/a"), "{err}");
    let accepting = ring.clone().accept_unbound(true);
    assert_eq!(accepting.decrypt_for(b"elsewhere", &old).unwrap(), b"token");
    let report = reencrypt_prefix(&store, &accepting, b"p/").await.unwrap();
    assert_eq!(report.reencrypted, 1);
    let stored = store.get(b"p/a").await.unwrap().unwrap().value;
    assert_eq!(stored[0], ENVELOPE_VERSION);
    assert_eq!(ring.decrypt_for(b"p/a", &stored).unwrap(), b"token");
    assert!(ring.decrypt_for(b"p/b", &stored).is_err());
}

#[test]
fn a_value_opens_only_at_the_key_it_was_sealed_for() {
    let ring = ring("k1", KEY_A);
    let codec = Encrypted::new(Arc::new(ring.clone()), Text);
    let sealed = codec
        .encode_for(b"nxc:pool:wx:prod", &"secret".to_string())
        .unwrap();
    assert_eq!(
        codec.decode_for(b"nxc:pool:wx:prod", &sealed).unwrap(),
        "secret"
    );
    for other in [
        &b"nxc:pool:wx:test"[..],
        b"nxc:pool:wx:prod ",
        b"",
        b"nxc:pool:wx:pro",
    ] {
        let err = codec.decode_for(other, &sealed).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec);
        assert!(err.to_string().contains("another storage key"), "{err}");
    }
    // `encode`/`decode` bind to no key, and do not open a bound value.
    assert!(codec.decode(&sealed).is_err());
    let unbound_here = codec.encode(&"x".to_string()).unwrap();
    assert_eq!(codec.decode(&unbound_here).unwrap(), "x");
    assert!(codec.decode_for(b"k", &unbound_here).is_err());
    // The key id in the header cannot be confused with the start of the storage key.
    let longer = Keyring::new("k1n", EncryptionKey::from_bytes(KEY_A)).unwrap();
    let sealed = longer.encrypt_for(b"ame", b"x").unwrap();
    assert!(ring.decrypt_for(b"name", &sealed).is_err());
}

/// A schema says which of its values are sealed: tools learn it from the template's
/// description, whatever the codec's type is called.
#[test]
fn a_template_says_whether_its_values_are_encrypted() {
    use keyplane_core::keyspace::{Key, TemplateInfo};

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "s/{id}/token", value = Encrypted<Json<String>>)]
    struct Sealed {
        id: u64,
    }

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "s/{id}/name", value = Text)]
    struct Open {
        id: u64,
    }

    /// A codec of the user's own that seals through the encrypted one, under its own name.
    struct Vault(Encrypted<Text>);

    impl Codec for Vault {
        type Value = String;
        const ENCRYPTED: bool = true;
        fn encode(&self, value: &String) -> keyplane_core::Result<Vec<u8>> {
            self.0.encode(value)
        }
        fn decode(&self, bytes: &[u8]) -> keyplane_core::Result<String> {
            self.0.decode(bytes)
        }
    }

    impl keyplane_core::keyspace::BuildCodec for Vault {
        fn build(context: &keyplane_core::keyspace::CodecContext) -> keyplane_core::Result<Self> {
            Ok(Vault(Encrypted::build(context)?))
        }
    }

    #[derive(Key, Debug, Clone, PartialEq)]
    #[kv(template = "s/{id}/vault", value = Vault)]
    struct InVault {
        id: u64,
    }

    assert!(TemplateInfo::of_key::<Sealed>().encrypted);
    assert!(!TemplateInfo::of_key::<Open>().encrypted);
    assert!(TemplateInfo::of_key::<InVault>().encrypted);
}

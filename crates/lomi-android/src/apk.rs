//! An APK's package name and version, read from its `AndroidManifest.xml`: the zip's central
//! directory finds the entry (stored or deflated), and the manifest is Android's binary XML
//! (what aapt and aapt2 write) or plain-text XML (what the device fixture installs).

/// The manifest's identity of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub package: String,
    pub version_code: Option<u64>,
    pub version_name: Option<String>,
}

const MANIFEST: &str = "AndroidManifest.xml";
/// A manifest larger than this is not an app's manifest.
const MANIFEST_LIMIT: usize = 16 << 20;

pub(crate) fn read_manifest(apk: &[u8]) -> Result<Manifest, String> {
    let xml = zip_entry(apk, MANIFEST)?;
    if xml.starts_with(&[0x03, 0x00, 0x08, 0x00]) {
        binary_manifest(&xml)
    } else {
        text_manifest(&xml)
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<usize> {
    bytes
        .get(at..at + 2)
        .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn usize_at(bytes: &[u8], at: usize) -> Option<usize> {
    u32_at(bytes, at).and_then(|value| usize::try_from(value).ok())
}

/// One entry's bytes, found through the central directory.
fn zip_entry(zip: &[u8], wanted: &str) -> Result<Vec<u8>, String> {
    let not_zip = || "the file is not an APK (no zip central directory)".to_owned();
    // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
    let search_from = zip.len().saturating_sub(65_557);
    let end = (search_from..zip.len().saturating_sub(21))
        .rev()
        .find(|at| zip[*at..].starts_with(b"PK\x05\x06"))
        .ok_or_else(not_zip)?;
    let count = u16_at(zip, end + 10).ok_or_else(not_zip)?;
    let mut at = usize_at(zip, end + 16).ok_or_else(not_zip)?;
    for _ in 0..count {
        if zip.get(at..at + 4) != Some(b"PK\x01\x02") {
            return Err(not_zip());
        }
        let field = |offset: usize| u16_at(zip, at + offset).ok_or_else(not_zip);
        let (method, name_length, extra_length, comment_length) =
            (field(10)?, field(28)?, field(30)?, field(32)?);
        let compressed = usize_at(zip, at + 20).ok_or_else(not_zip)?;
        let local = usize_at(zip, at + 42).ok_or_else(not_zip)?;
        let name = zip
            .get(at + 46..at + 46 + name_length)
            .ok_or_else(not_zip)?;
        if name == wanted.as_bytes() {
            let local_name = u16_at(zip, local + 26).ok_or_else(not_zip)?;
            let local_extra = u16_at(zip, local + 28).ok_or_else(not_zip)?;
            let start = local + 30 + local_name + local_extra;
            let data = zip.get(start..start + compressed).ok_or_else(not_zip)?;
            return match method {
                0 => Ok(data.to_vec()),
                8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, MANIFEST_LIMIT)
                    .map_err(|error| format!("{wanted} does not inflate: {error:?}")),
                other => Err(format!(
                    "{wanted} uses zip method {other}, which Lomi cannot read"
                )),
            };
        }
        at += 46 + name_length + extra_length + comment_length;
    }
    Err(format!("the APK has no {wanted}"))
}

fn text_manifest(xml: &[u8]) -> Result<Manifest, String> {
    const ANDROID: &str = "http://schemas.android.com/apk/res/android";
    let text = std::str::from_utf8(xml)
        .map_err(|_| format!("{MANIFEST} is neither binary nor text XML"))?;
    let document =
        roxmltree::Document::parse(text).map_err(|error| format!("{MANIFEST}: {error}"))?;
    let root = document.root_element();
    let package = root
        .attribute("package")
        .ok_or_else(|| format!("{MANIFEST} names no package"))?;
    Ok(Manifest {
        package: package.to_owned(),
        version_code: root
            .attribute((ANDROID, "versionCode"))
            .and_then(|code| code.parse().ok()),
        version_name: root.attribute((ANDROID, "versionName")).map(str::to_owned),
    })
}

/// Android's binary XML: a string pool, then elements whose attributes point into it. Only the
/// first element (`<manifest>`) is read.
fn binary_manifest(xml: &[u8]) -> Result<Manifest, String> {
    let bad = || format!("{MANIFEST} is damaged binary XML");
    let mut strings: Vec<String> = Vec::new();
    let mut at = 8;
    while at + 8 <= xml.len() {
        let kind = u16_at(xml, at).ok_or_else(bad)?;
        let header = u16_at(xml, at + 2).ok_or_else(bad)?;
        let size = usize_at(xml, at + 4).ok_or_else(bad)?;
        if size < 8 {
            return Err(bad());
        }
        match kind {
            0x0001 => {
                strings = string_pool(xml.get(at..at + size).ok_or_else(bad)?).ok_or_else(bad)?
            }
            0x0102 => {
                let string = |index: u32| {
                    usize::try_from(index)
                        .ok()
                        .and_then(|i| strings.get(i))
                        .cloned()
                };
                let count = u16_at(xml, at + header + 12).ok_or_else(bad)?;
                let attribute_start = u16_at(xml, at + header + 8).ok_or_else(bad)?;
                let attribute_size = u16_at(xml, at + header + 10).ok_or_else(bad)?;
                let mut manifest = Manifest {
                    package: String::new(),
                    version_code: None,
                    version_name: None,
                };
                for index in 0..count {
                    let base = at + header + attribute_start + index * attribute_size;
                    let name = u32_at(xml, base + 4).and_then(string).unwrap_or_default();
                    let raw = u32_at(xml, base + 8).ok_or_else(bad)?;
                    let data_type = xml.get(base + 15).copied().ok_or_else(bad)?;
                    let data = u32_at(xml, base + 16).ok_or_else(bad)?;
                    // A string value (type 3) or a raw string beside a typed one.
                    let text = if raw == u32::MAX { None } else { string(raw) }.or_else(|| {
                        if data_type == 0x03 {
                            string(data)
                        } else {
                            None
                        }
                    });
                    match name.as_str() {
                        "package" => manifest.package = text.unwrap_or_default(),
                        "versionCode" => {
                            manifest.version_code = match data_type {
                                0x10 | 0x11 => Some(u64::from(data)),
                                _ => text.and_then(|text| text.parse().ok()),
                            }
                        }
                        "versionName" => manifest.version_name = text,
                        _ => {}
                    }
                }
                if manifest.package.is_empty() {
                    return Err(format!("{MANIFEST} names no package"));
                }
                return Ok(manifest);
            }
            _ => {}
        }
        at += size;
    }
    Err(format!("{MANIFEST} has no <manifest> element"))
}

/// The strings of a string pool chunk (UTF-8 or UTF-16).
fn string_pool(chunk: &[u8]) -> Option<Vec<String>> {
    let header = u16_at(chunk, 2)?;
    let count = usize_at(chunk, 8)?;
    let utf8 = u32_at(chunk, 16)? & 0x100 != 0;
    let start = usize_at(chunk, 20)?;
    (0..count)
        .map(|index| {
            let at = start + usize_at(chunk, header + index * 4)?;
            if utf8 {
                // The length in characters, then in bytes, each one or two bytes.
                let skip = |at: usize| -> Option<(usize, usize)> {
                    let first = usize::from(*chunk.get(at)?);
                    if first & 0x80 == 0 {
                        Some((first, at + 1))
                    } else {
                        Some((
                            ((first & 0x7f) << 8) | usize::from(*chunk.get(at + 1)?),
                            at + 2,
                        ))
                    }
                };
                let (_, at) = skip(at)?;
                let (length, at) = skip(at)?;
                Some(String::from_utf8_lossy(chunk.get(at..at + length)?).into_owned())
            } else {
                let mut length = u16_at(chunk, at)?;
                let mut at = at + 2;
                if length & 0x8000 != 0 {
                    length = ((length & 0x7fff) << 16) | u16_at(chunk, at)?;
                    at += 2;
                }
                let units: Vec<u16> = (0..length)
                    .map(|i| u16_at(chunk, at + i * 2).and_then(|unit| u16::try_from(unit).ok()))
                    .collect::<Option<_>>()?;
                Some(String::from_utf16_lossy(&units))
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zip with one entry, stored (`method` 0) or deflated (8), with its central directory.
    pub(crate) fn zip(name: &str, content: &[u8], deflate: bool) -> Vec<u8> {
        let data = if deflate {
            miniz_oxide::deflate::compress_to_vec(content, 6)
        } else {
            content.to_vec()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let sizes = |out: &mut Vec<u8>| {
            out.extend_from_slice(&0u32.to_le_bytes()); // CRC, not checked here
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(content.len() as u32).to_le_bytes());
        };
        let mut out = b"PK\x03\x04".to_vec();
        out.extend_from_slice(&[20, 0, 0, 0]);
        out.extend_from_slice(&method.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        sizes(&mut out);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&data);
        let directory = out.len();
        out.extend_from_slice(b"PK\x01\x02");
        out.extend_from_slice(&[20, 0, 20, 0, 0, 0]);
        out.extend_from_slice(&method.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        sizes(&mut out);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 12]);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        let directory_size = out.len() - directory;
        out.extend_from_slice(b"PK\x05\x06");
        out.extend_from_slice(&[0, 0, 0, 0, 1, 0, 1, 0]);
        out.extend_from_slice(&(directory_size as u32).to_le_bytes());
        out.extend_from_slice(&(directory as u32).to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// Binary XML with a UTF-16 string pool and one `<manifest>` element.
    fn binary(package: &str, version_code: u32, version_name: &str) -> Vec<u8> {
        let strings = [
            "manifest",
            "package",
            "versionCode",
            "versionName",
            package,
            version_name,
        ];
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for text in strings {
            offsets.push(data.len() as u32);
            let units: Vec<u16> = text.encode_utf16().collect();
            data.extend_from_slice(&(units.len() as u16).to_le_bytes());
            units
                .iter()
                .for_each(|unit| data.extend_from_slice(&unit.to_le_bytes()));
            data.extend_from_slice(&[0, 0]);
        }
        while data.len() % 4 != 0 {
            data.push(0);
        }
        let pool_header = 28;
        let start = pool_header + offsets.len() * 4;
        let mut pool = Vec::new();
        pool.extend_from_slice(&1u16.to_le_bytes());
        pool.extend_from_slice(&(pool_header as u16).to_le_bytes());
        pool.extend_from_slice(&((start + data.len()) as u32).to_le_bytes());
        for word in [strings.len() as u32, 0, 0, start as u32, 0] {
            pool.extend_from_slice(&word.to_le_bytes());
        }
        offsets
            .iter()
            .for_each(|offset| pool.extend_from_slice(&offset.to_le_bytes()));
        pool.extend_from_slice(&data);
        // name, raw value, typed value (size 8, res0, type, data)
        let attributes = [
            (1u32, 4u32, 0x03u8, 4u32),
            (2, u32::MAX, 0x10, version_code),
            (3, 5, 0x03, 5),
        ];
        let mut element = Vec::new();
        element.extend_from_slice(&0x0102u16.to_le_bytes());
        element.extend_from_slice(&16u16.to_le_bytes());
        element.extend_from_slice(&((16 + 20 + attributes.len() * 20) as u32).to_le_bytes());
        element.extend_from_slice(&[0; 8]);
        element.extend_from_slice(&u32::MAX.to_le_bytes());
        element.extend_from_slice(&0u32.to_le_bytes());
        for half in [20u16, 20, attributes.len() as u16, 0, 0, 0] {
            element.extend_from_slice(&half.to_le_bytes());
        }
        for (name, raw, kind, value) in attributes {
            element.extend_from_slice(&u32::MAX.to_le_bytes());
            element.extend_from_slice(&name.to_le_bytes());
            element.extend_from_slice(&raw.to_le_bytes());
            element.extend_from_slice(&[8, 0, 0, kind]);
            element.extend_from_slice(&value.to_le_bytes());
        }
        let mut xml = vec![0x03, 0x00, 0x08, 0x00];
        xml.extend_from_slice(&((8 + pool.len() + element.len()) as u32).to_le_bytes());
        xml.extend_from_slice(&pool);
        xml.extend_from_slice(&element);
        xml
    }

    #[test]
    fn manifests_binary_and_text_stored_and_deflated() {
        let expected = Manifest {
            package: "org.lomi.demo".into(),
            version_code: Some(42),
            version_name: Some("4.2".into()),
        };
        let binary = binary("org.lomi.demo", 42, "4.2");
        assert_eq!(
            read_manifest(&zip(MANIFEST, &binary, true)),
            Ok(expected.clone())
        );
        assert_eq!(
            read_manifest(&zip(MANIFEST, &binary, false)),
            Ok(expected.clone())
        );
        let text = br#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="org.lomi.demo" android:versionCode="42" android:versionName="4.2"/>"#;
        assert_eq!(
            read_manifest(&zip(MANIFEST, text, false)),
            Ok(expected.clone())
        );
        assert_eq!(read_manifest(&zip(MANIFEST, text, true)), Ok(expected));
        assert!(read_manifest(b"not a zip").is_err());
        assert!(read_manifest(&zip("classes.dex", b"x", false)).is_err());
        assert!(read_manifest(&zip(MANIFEST, &binary[..40], false)).is_err());
    }
}

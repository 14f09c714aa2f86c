//! How the fixture's package manager reads an APK, as Android's does: `AndroidManifest.xml`
//! found through the zip's central directory (stored or deflated), then its binary XML, with
//! `android:versionCode` and `android:versionName` recognised by their resource ids (the
//! resource map), not by their names. This is written apart from Lomi's own reader
//! (`lomi-android/src/apk.rs`), so an install through the fixture checks Lomi's reading.
//!
//! A stored plain-text manifest is accepted too (a phone would refuse it): it keeps small
//! test APKs easy to write.

/// `android:versionCode` and `android:versionName` in framework-res's resource table.
const VERSION_CODE_ID: u32 = 0x0101_021b;
const VERSION_NAME_ID: u32 = 0x0101_021c;
const MANIFEST: &str = "AndroidManifest.xml";
const MANIFEST_LIMIT: usize = 8 << 20;

/// What `pm` learns from an APK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackageInfo {
    pub name: String,
    pub version_code: u64,
    pub version_name: String,
}

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u16(&self, at: usize) -> Result<u16, String> {
        self.0
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("truncated at byte {at}"))
    }

    fn u32(&self, at: usize) -> Result<u32, String> {
        self.0
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| format!("truncated at byte {at}"))
    }

    fn index(&self, at: usize) -> Result<usize, String> {
        self.u32(at)
            .and_then(|value| usize::try_from(value).map_err(|error| error.to_string()))
    }

    fn slice(&self, from: usize, length: usize) -> Result<&[u8], String> {
        self.0
            .get(from..from.saturating_add(length))
            .ok_or_else(|| format!("{length} bytes at {from} run past the end"))
    }
}

pub(crate) fn package_info(apk: &[u8]) -> Result<PackageInfo, String> {
    let manifest = entry(apk, MANIFEST)?;
    // RES_XML_TYPE (0x0003) with an 8-byte header.
    if manifest.starts_with(&[0x03, 0x00, 0x08, 0x00]) {
        binary_manifest(&manifest)
    } else {
        text_manifest(&manifest)
    }
}

/// An entry's uncompressed bytes, through the end-of-central-directory record.
fn entry(apk: &[u8], wanted: &str) -> Result<Vec<u8>, String> {
    let zip = Bytes(apk);
    let end = apk
        .windows(4)
        .rposition(|window| window == b"PK\x05\x06")
        .ok_or("no zip end-of-central-directory record")?;
    let entries = zip.u16(end + 10)?;
    let mut at = zip.index(end + 16)?;
    for _ in 0..entries {
        if zip.slice(at, 4)? != b"PK\x01\x02" {
            return Err("a damaged zip central directory".to_owned());
        }
        let method = zip.u16(at + 10)?;
        let compressed = zip.index(at + 20)?;
        let name_length = usize::from(zip.u16(at + 28)?);
        let skip = name_length + usize::from(zip.u16(at + 30)?) + usize::from(zip.u16(at + 32)?);
        let local = zip.index(at + 42)?;
        if zip.slice(at + 46, name_length)? == wanted.as_bytes() {
            if zip.slice(local, 4)? != b"PK\x03\x04" {
                return Err(format!("{wanted}'s local header is missing"));
            }
            let data_at =
                local + 30 + usize::from(zip.u16(local + 26)?) + usize::from(zip.u16(local + 28)?);
            let data = zip.slice(data_at, compressed)?;
            return match method {
                0 => Ok(data.to_vec()),
                8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, MANIFEST_LIMIT)
                    .map_err(|error| format!("{wanted} does not inflate: {error:?}")),
                other => Err(format!("{wanted} uses zip method {other}")),
            };
        }
        at += 46 + skip;
    }
    Err(format!("no {wanted} in the zip"))
}

fn text_manifest(xml: &[u8]) -> Result<PackageInfo, String> {
    let text = std::str::from_utf8(xml).map_err(|_| "the manifest is neither binary nor text")?;
    let attribute = |name: &str| -> Option<String> {
        let start = text.find(&format!("{name}=\""))? + name.len() + 2;
        let end = text[start..].find('"')? + start;
        Some(text[start..end].to_owned())
    };
    Ok(PackageInfo {
        name: attribute(" package").ok_or("the manifest has no package")?,
        version_code: attribute("android:versionCode")
            .and_then(|code| code.parse().ok())
            .unwrap_or(1),
        version_name: attribute("android:versionName").unwrap_or_default(),
    })
}

/// The `<manifest>` element of binary XML: its `package` (no namespace, so by name) and the
/// two version attributes (by resource id).
fn binary_manifest(xml: &[u8]) -> Result<PackageInfo, String> {
    let xml = Bytes(xml);
    let mut strings: Vec<String> = Vec::new();
    let mut resource_ids: Vec<u32> = Vec::new();
    let mut at = usize::from(xml.u16(2)?);
    while at < xml.0.len() {
        let kind = xml.u16(at)?;
        let header = usize::from(xml.u16(at + 2)?);
        let size = xml.index(at + 4)?;
        if size < 8 {
            return Err(format!("a binary XML chunk of size {size}"));
        }
        let chunk = Bytes(xml.slice(at, size)?);
        match kind {
            0x0001 => strings = string_pool(&chunk)?,
            0x0180 => {
                resource_ids = (header..size)
                    .step_by(4)
                    .map(|offset| chunk.u32(offset))
                    .collect::<Result<_, _>>()?;
            }
            0x0102 => return manifest_element(&chunk, header, &strings, &resource_ids),
            _ => {}
        }
        at += size;
    }
    Err("the binary XML has no element".to_owned())
}

fn manifest_element(
    element: &Bytes,
    header: usize,
    strings: &[String],
    resource_ids: &[u32],
) -> Result<PackageInfo, String> {
    let string = |index: u32| -> Option<&str> {
        strings
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    };
    // ResXMLTree_attrExt: ns, name, attributeStart, attributeSize, attributeCount, …
    if string(element.u32(header + 4)?) != Some("manifest") {
        return Err("the first element is not <manifest>".to_owned());
    }
    let start = usize::from(element.u16(header + 8)?);
    let size = usize::from(element.u16(header + 10)?);
    let count = usize::from(element.u16(header + 12)?);
    let (mut name, mut version_code, mut version_name) = (None, 1, String::new());
    for attribute in 0..count {
        let at = header + start + attribute * size;
        let name_index = element.u32(at + 4)?;
        let raw = element.u32(at + 8)?;
        // Res_value: size (2), res0 (1), dataType (1), data (4).
        let data_type = element.slice(at + 15, 1)?[0];
        let data = element.u32(at + 16)?;
        let text = || {
            string(raw)
                .or_else(|| (data_type == 0x03).then(|| string(data)).flatten())
                .map(str::to_owned)
        };
        let id = usize::try_from(name_index)
            .ok()
            .and_then(|index| resource_ids.get(index))
            .copied();
        match id {
            Some(VERSION_CODE_ID) => {
                version_code = match data_type {
                    // TYPE_INT_DEC, TYPE_INT_HEX
                    0x10 | 0x11 => u64::from(data),
                    _ => text()
                        .and_then(|code| code.parse().ok())
                        .ok_or("android:versionCode is not an integer")?,
                }
            }
            Some(VERSION_NAME_ID) => version_name = text().unwrap_or_default(),
            Some(_) => {}
            None if string(name_index) == Some("package") => name = text(),
            None => {}
        }
    }
    Ok(PackageInfo {
        name: name
            .filter(|name| !name.is_empty())
            .ok_or("<manifest> has no package")?,
        version_code,
        version_name,
    })
}

/// ResStringPool: UTF-16 (a u16 length, with a high bit for a second u16) or UTF-8 (the
/// character count, then the byte count, each one or two bytes).
fn string_pool(pool: &Bytes) -> Result<Vec<String>, String> {
    let header = usize::from(pool.u16(2)?);
    let count = pool.index(8)?;
    let utf8 = pool.u32(16)? & (1 << 8) != 0;
    let strings_at = pool.index(20)?;
    let mut strings = Vec::with_capacity(count.min(4096));
    for index in 0..count {
        let at = strings_at + pool.index(header + index * 4)?;
        let string = if utf8 {
            let length = |at: usize| -> Result<(usize, usize), String> {
                let first = usize::from(pool.slice(at, 1)?[0]);
                if first & 0x80 == 0 {
                    Ok((first, at + 1))
                } else {
                    let second = usize::from(pool.slice(at + 1, 1)?[0]);
                    Ok((((first & 0x7f) << 8) | second, at + 2))
                }
            };
            let (_characters, at) = length(at)?;
            let (bytes, at) = length(at)?;
            String::from_utf8_lossy(pool.slice(at, bytes)?).into_owned()
        } else {
            let first = usize::from(pool.u16(at)?);
            let (units, at) = if first & 0x8000 == 0 {
                (first, at + 2)
            } else {
                (
                    ((first & 0x7fff) << 16) | usize::from(pool.u16(at + 2)?),
                    at + 4,
                )
            };
            let units: Vec<u16> = (0..units)
                .map(|unit| pool.u16(at + unit * 2))
                .collect::<Result<_, _>>()?;
            String::from_utf16_lossy(&units)
        };
        strings.push(string);
    }
    Ok(strings)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zip of one stored entry with its central directory, as `zip -0` writes.
    pub(crate) fn stored_zip(name: &str, content: &[u8]) -> Vec<u8> {
        let length = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
        let name_length = u16::try_from(name.len()).unwrap_or(0).to_le_bytes();
        let mut zip = b"PK\x03\x04".to_vec();
        zip.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        zip.extend_from_slice(&length(content.len()));
        zip.extend_from_slice(&length(content.len()));
        zip.extend_from_slice(&name_length);
        zip.extend_from_slice(&[0, 0]);
        zip.extend_from_slice(name.as_bytes());
        zip.extend_from_slice(content);
        let directory = zip.len();
        zip.extend_from_slice(b"PK\x01\x02");
        zip.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        zip.extend_from_slice(&length(content.len()));
        zip.extend_from_slice(&length(content.len()));
        zip.extend_from_slice(&name_length);
        zip.extend_from_slice(&[0; 12]);
        zip.extend_from_slice(&[0; 4]); // the local header is at 0
        zip.extend_from_slice(name.as_bytes());
        let directory_size = zip.len() - directory;
        zip.extend_from_slice(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
        zip.extend_from_slice(&length(directory_size));
        zip.extend_from_slice(&length(directory));
        zip.extend_from_slice(&[0, 0]);
        zip
    }

    /// Binary XML for `<manifest package=… android:versionCode=… android:versionName=…>`,
    /// UTF-16 strings, the two version attributes named only through the resource map.
    fn binary_xml(package: &str, version_code: u32, version_name: &str) -> Vec<u8> {
        // Strings 0 and 1 are the mapped attribute names; the map gives their ids.
        let strings = [
            "versionCode",
            "versionName",
            "package",
            "manifest",
            version_name,
            package,
        ];
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for string in strings {
            offsets.push(u32::try_from(data.len()).unwrap_or(0));
            let units: Vec<u16> = string.encode_utf16().collect();
            data.extend_from_slice(&u16::try_from(units.len()).unwrap_or(0).to_le_bytes());
            for unit in units {
                data.extend_from_slice(&unit.to_le_bytes());
            }
            data.extend_from_slice(&[0, 0]);
        }
        while data.len() % 4 != 0 {
            data.push(0);
        }
        let header = 28;
        let strings_at = header + 4 * strings.len();
        let mut pool = Vec::new();
        pool.extend_from_slice(&1u16.to_le_bytes());
        pool.extend_from_slice(&(header as u16).to_le_bytes());
        pool.extend_from_slice(&((strings_at + data.len()) as u32).to_le_bytes());
        pool.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        pool.extend_from_slice(&[0; 8]); // no styles, UTF-16
        pool.extend_from_slice(&(strings_at as u32).to_le_bytes());
        pool.extend_from_slice(&[0; 4]);
        for offset in offsets {
            pool.extend_from_slice(&offset.to_le_bytes());
        }
        pool.extend_from_slice(&data);

        let mut map = vec![0x80, 0x01, 8, 0];
        map.extend_from_slice(&16u32.to_le_bytes());
        map.extend_from_slice(&VERSION_CODE_ID.to_le_bytes());
        map.extend_from_slice(&VERSION_NAME_ID.to_le_bytes());

        let attribute = |name: u32, raw: u32, data_type: u8, value: u32| {
            let mut bytes = u32::MAX.to_le_bytes().to_vec(); // no namespace index checked
            bytes.extend_from_slice(&name.to_le_bytes());
            bytes.extend_from_slice(&raw.to_le_bytes());
            bytes.extend_from_slice(&[8, 0, 0, data_type]);
            bytes.extend_from_slice(&value.to_le_bytes());
            bytes
        };
        let mut element = vec![0x02, 0x01, 16, 0];
        element.extend_from_slice(&(16u32 + 20 + 3 * 20).to_le_bytes());
        element.extend_from_slice(&[0; 8]); // line number, comment
        element.extend_from_slice(&u32::MAX.to_le_bytes()); // namespace
        element.extend_from_slice(&3u32.to_le_bytes()); // "manifest"
        element.extend_from_slice(&[20, 0, 20, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
        element.extend(attribute(0, u32::MAX, 0x10, version_code));
        element.extend(attribute(1, 4, 0x03, 4));
        element.extend(attribute(2, 5, 0x03, 5));

        let body = [pool, map, element].concat();
        let mut xml = vec![0x03, 0x00, 0x08, 0x00];
        xml.extend_from_slice(&((8 + body.len()) as u32).to_le_bytes());
        xml.extend(body);
        xml
    }

    #[test]
    fn binary_and_text_manifests() {
        let binary = stored_zip(
            "AndroidManifest.xml",
            &binary_xml("org.lomi.bin", 42, "4.2"),
        );
        assert_eq!(
            package_info(&binary),
            Ok(PackageInfo {
                name: "org.lomi.bin".to_owned(),
                version_code: 42,
                version_name: "4.2".to_owned(),
            })
        );
        let text = stored_zip(
            "AndroidManifest.xml",
            br#"<manifest xmlns:android="x" package="org.lomi.text" android:versionCode="7" android:versionName="1.7"/>"#,
        );
        assert_eq!(
            package_info(&text).map(|info| (info.name, info.version_code)),
            Ok(("org.lomi.text".to_owned(), 7))
        );
        assert!(package_info(b"PK\x03\x04").is_err());
        assert!(
            package_info(&stored_zip("classes.dex", b"dex"))
                .is_err_and(|why| why.contains("no AndroidManifest.xml"))
        );
        let mut damaged = binary_xml("org.lomi.bin", 42, "4.2");
        damaged.truncate(60);
        assert!(package_info(&stored_zip("AndroidManifest.xml", &damaged)).is_err());
    }
}

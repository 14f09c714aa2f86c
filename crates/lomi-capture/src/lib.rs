//! The PNG side of captures: decode a screenshot with guards, clip it, scale it, fit it into a
//! byte budget, cut the top of a tall one, and re-encode it with its sha256. Plain functions;
//! no MCP, broker or browser.

mod error;

use std::io::Cursor;

use image::codecs::png::{CompressionType, FilterType as PngFilter, PngDecoder, PngEncoder};
use image::imageops::{self, FilterType};
use image::{DynamicImage, ExtendedColorType, ImageDecoder, ImageEncoder, ImageError, RgbaImage};
use sha2::{Digest, Sha256};

pub use error::CaptureError;

/// The eight bytes every PNG file starts with.
const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
/// The largest side, in pixels, a capture may have; anything larger is refused before decoding.
pub const MAX_SIDE: u32 = 16_384;
/// The largest side of a PNG kept whole without being decoded (a tall page saved into the
/// project): only its structure is checked ([`inspect_png_within`]) and only its top is
/// decoded ([`top`]), a few screens of rows at a time.
pub const MAX_SAVED_SIDE: u32 = 131_072;
/// The smallest accepted `scale`, and the floor the `max_bytes` search stops at.
pub const MIN_SCALE: f32 = 0.05;
/// The largest accepted `scale`: captures are only ever scaled down.
pub const MAX_SCALE: f32 = 1.0;

/// A finished capture: the encoded PNG, its size in pixels and the hex sha256 of `png`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub sha256: String,
}

/// A rectangle in image pixels, `x`/`y` being its top-left corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// What to do with a source PNG. The default keeps the whole image at full size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CaptureOptions {
    /// Keep only this part of the image; it must lie inside the image and not be empty.
    pub clip: Option<Rect>,
    /// Scale the (clipped) image by this factor, `MIN_SCALE..=MAX_SCALE`.
    pub scale: Option<f32>,
    /// If the encoded PNG is larger than this, scale down further until it fits.
    pub max_bytes: Option<usize>,
}

/// Decodes a PNG into RGBA8. Bytes that are not a PNG (an `adb` error text, say) are `NotPng`;
/// a PNG wider or taller than `MAX_SIDE` is refused from its header, before any pixel buffer is
/// allocated.
pub fn decode_png(bytes: &[u8]) -> Result<RgbaImage, CaptureError> {
    if !bytes.starts_with(&PNG_SIGNATURE) {
        return Err(CaptureError::NotPng {
            start: preview(bytes),
        });
    }
    let mut decoder = PngDecoder::new(Cursor::new(bytes)).map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(CaptureError::Oversized { width, height });
    }
    // The side check above is ours; these limits make the decoder keep the same promise for any
    // buffer it allocates (16-bit RGBA at the largest size is 8 bytes a pixel).
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(u64::from(MAX_SIDE) * u64::from(MAX_SIDE) * 8);
    decoder.set_limits(limits).map_err(corrupt)?;
    let image = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    Ok(image.into_rgba8())
}

/// Checks a PNG's structure without decoding its pixels: the signature, every chunk's length
/// and CRC, an IHDR first with sides from 1 to `MAX_SIDE`, at least one IDAT, and IEND last.
/// Returns its width and height. This is how a capture that needs no change is accepted as is.
pub fn inspect_png(bytes: &[u8]) -> Result<(u32, u32), CaptureError> {
    inspect_png_within(bytes, MAX_SIDE)
}

/// [`inspect_png`] with sides up to `max_side` (at most [`MAX_SAVED_SIDE`]).
pub fn inspect_png_within(bytes: &[u8], max_side: u32) -> Result<(u32, u32), CaptureError> {
    let max_side = max_side.min(MAX_SAVED_SIDE);
    if !bytes.starts_with(&PNG_SIGNATURE) {
        return Err(CaptureError::NotPng {
            start: preview(bytes),
        });
    }
    let bad = |why: &str| CaptureError::Corrupt(why.to_owned());
    let mut at = PNG_SIGNATURE.len();
    let mut size = None;
    let mut idat = false;
    loop {
        let header = bytes
            .get(at..at + 8)
            .ok_or_else(|| bad("the PNG ends inside a chunk header"))?;
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let data_end = (at + 8)
            .checked_add(length)
            .ok_or_else(|| bad("a chunk length overflows"))?;
        let crc_end = data_end + 4;
        let chunk = bytes
            .get(at + 4..data_end)
            .ok_or_else(|| bad("the PNG ends inside a chunk"))?;
        let crc = bytes
            .get(data_end..crc_end)
            .ok_or_else(|| bad("the PNG ends before a chunk's CRC"))?;
        if crc32fast::hash(chunk).to_be_bytes() != crc {
            return Err(bad("a chunk's CRC does not match its data"));
        }
        let data = &chunk[4..];
        match (kind, size) {
            (b"IHDR", None) if length == 13 => {
                let width = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
                let height = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
                if width == 0 || height == 0 {
                    return Err(bad("the PNG has an empty side"));
                }
                if width > max_side || height > max_side {
                    return Err(CaptureError::Oversized { width, height });
                }
                size = Some((width, height));
            }
            (_, None) => return Err(bad("the PNG does not start with its IHDR chunk")),
            (b"IHDR", Some(_)) => return Err(bad("the PNG has a second IHDR chunk")),
            (b"IDAT", Some(_)) => idat = true,
            (b"IEND", Some(size)) => {
                if !idat {
                    return Err(bad("the PNG has no image data"));
                }
                return Ok(size);
            }
            _ => {}
        }
        at = crc_end;
    }
}

/// Decodes `png`, applies `options` (clip, then scale, then the byte budget) and re-encodes it.
/// Without clip or scale, a PNG within the budget is returned as it came (see `inspect_png`).
///
/// Scaled sizes are `max(1, round(side * scale))` per side. With no scaling (or a scale that
/// rounds back to the same size) the pixels are copied exactly. When `max_bytes` is exceeded the
/// scale is multiplied by `sqrt(max_bytes / encoded_len)`, kept within `0.5..=0.9`, and the
/// clipped original is resampled again; the search stops at `MIN_SCALE` with `TooLarge`.
pub fn process(png: &[u8], options: &CaptureOptions) -> Result<Capture, CaptureError> {
    let scale = match options.scale {
        None => MAX_SCALE,
        Some(scale) if (MIN_SCALE..=MAX_SCALE).contains(&scale) => scale,
        Some(scale) => return Err(CaptureError::InvalidScale { scale }),
    };
    // Nothing to change: the source PNG is kept byte for byte once its structure checks out.
    if options.clip.is_none() && scale >= MAX_SCALE {
        let (width, height) = inspect_png(png)?;
        if options.max_bytes.is_none_or(|max| png.len() <= max) {
            return Ok(finish(png.to_vec(), width, height));
        }
    }
    let image = decode_png(png)?;
    let source = match options.clip {
        None => image,
        Some(clip) => clipped(&image, clip)?,
    };

    let mut scale = scale;
    loop {
        let (width, height) = (
            scaled(source.width(), scale),
            scaled(source.height(), scale),
        );
        let encoded = encode(&resized(&source, width, height))?;
        let Some(max_bytes) = options.max_bytes else {
            return Ok(finish(encoded, width, height));
        };
        if encoded.len() <= max_bytes {
            return Ok(finish(encoded, width, height));
        }
        if scale <= MIN_SCALE {
            return Err(CaptureError::TooLarge {
                max_bytes,
                smallest: encoded.len(),
                width,
                height,
            });
        }
        let step = (max_bytes as f64 / encoded.len() as f64)
            .sqrt()
            .clamp(0.5, 0.9);
        scale = ((f64::from(scale) * step) as f32).max(MIN_SCALE);
    }
}

/// The top of a PNG at its full width: at most `max_height` rows, fewer until the PNG is at
/// most `max_bytes`, encoded for speed (an image to look at, not a file to keep). Only the rows
/// kept are decoded, so the top of a page tens of thousands of pixels tall costs what a few
/// screens cost. A PNG within both limits comes back as it is. Sides up to
/// [`MAX_SAVED_SIDE`]; interlaced PNGs (which Chromium does not write) are refused.
pub fn top(png: &[u8], max_height: u32, max_bytes: usize) -> Result<Capture, CaptureError> {
    let (width, height) = inspect_png_within(png, MAX_SAVED_SIDE)?;
    if height <= max_height && png.len() <= max_bytes {
        return Ok(finish(png.to_vec(), width, height));
    }
    let mut decoder = png::Decoder::new(Cursor::new(png));
    // 8 bits per channel, palettes and low depths expanded: what the encoder below writes.
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .map_err(|e| CaptureError::Corrupt(e.to_string()))?;
    if reader.info().interlaced {
        return Err(CaptureError::Corrupt(
            "the PNG is interlaced; only plain PNGs are cut".to_owned(),
        ));
    }
    let (color, depth) = reader.output_color_type();
    let rows = height.min(max_height.max(1));
    let line = reader
        .output_line_size(width)
        .ok_or_else(|| CaptureError::Corrupt("the PNG's rows are too long".to_owned()))?;
    let mut pixels = Vec::with_capacity(line * rows as usize);
    for _ in 0..rows {
        let row = reader
            .next_row()
            .map_err(|e| CaptureError::Corrupt(e.to_string()))?
            .ok_or_else(|| CaptureError::Corrupt("the PNG ends before its height".to_owned()))?;
        pixels.extend_from_slice(row.data());
    }
    let mut kept = rows;
    loop {
        let encoded = encode_rows(&pixels[..line * kept as usize], width, kept, color, depth)?;
        if encoded.len() <= max_bytes {
            return Ok(finish(encoded, width, kept));
        }
        if kept == 1 {
            return Err(CaptureError::TooLarge {
                max_bytes,
                smallest: encoded.len(),
                width,
                height: kept,
            });
        }
        // Bytes grow about as rows do; aim a little under the budget so one more try is rare.
        let fit = (f64::from(kept) * max_bytes as f64 / encoded.len() as f64 * 0.95) as u32;
        kept = fit.clamp(1, kept - 1);
    }
}

/// `rows` rows of `pixels` (as the decoder gave them) as a PNG, compressed for speed.
fn encode_rows(
    pixels: &[u8],
    width: u32,
    rows: u32,
    color: png::ColorType,
    depth: png::BitDepth,
) -> Result<Vec<u8>, CaptureError> {
    let failed = |e: png::EncodingError| CaptureError::Encode(e.to_string());
    let mut out = Vec::with_capacity(pixels.len() / 4);
    let mut encoder = png::Encoder::new(&mut out, width, rows);
    encoder.set_color(color);
    encoder.set_depth(depth);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

/// How a capture differs from an earlier one of the same thing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Pixels whose RGBA differ, plus every pixel outside the overlap when the sizes differ.
    pub changed: u64,
    /// Pixels of the larger width by the larger height.
    pub total: u64,
    /// That area as a PNG: changed pixels opaque red, the rest transparent. `None` when no
    /// pixel changed.
    pub diff_png: Option<Vec<u8>>,
}

impl Difference {
    /// The share of pixels that changed, 0 to 1.
    pub fn ratio(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.changed as f64 / self.total as f64
        }
    }
}

/// Compares two PNGs pixel by pixel (exact RGBA; decoding with the guards of [`decode_png`]).
pub fn compare(old: &[u8], new: &[u8]) -> Result<Difference, CaptureError> {
    let (old, new) = (decode_png(old)?, decode_png(new)?);
    let width = old.width().max(new.width());
    let height = old.height().max(new.height());
    let mut diff = RgbaImage::new(width, height);
    let mut changed = 0u64;
    for (x, y, pixel) in diff.enumerate_pixels_mut() {
        let before = old.get_pixel_checked(x, y);
        let after = new.get_pixel_checked(x, y);
        let same = matches!((before, after), (Some(a), Some(b)) if a == b);
        if !same {
            changed += 1;
            *pixel = image::Rgba([255, 0, 0, 255]);
        }
    }
    let diff_png = if changed == 0 {
        None
    } else {
        Some(encode(&diff)?)
    };
    Ok(Difference {
        changed,
        total: u64::from(width) * u64::from(height),
        diff_png,
    })
}

fn clipped(image: &RgbaImage, clip: Rect) -> Result<RgbaImage, CaptureError> {
    let inside = |start: u32, length: u32, limit: u32| {
        length > 0 && start.checked_add(length).is_some_and(|end| end <= limit)
    };
    if !inside(clip.x, clip.width, image.width()) || !inside(clip.y, clip.height, image.height()) {
        return Err(CaptureError::InvalidClip {
            clip,
            image_width: image.width(),
            image_height: image.height(),
        });
    }
    Ok(imageops::crop_imm(image, clip.x, clip.y, clip.width, clip.height).to_image())
}

fn scaled(side: u32, scale: f32) -> u32 {
    // `side` is at most MAX_SIDE and `scale` at most 1, so the product fits a u32.
    ((f64::from(side) * f64::from(scale)).round() as u32).max(1)
}

fn resized(source: &RgbaImage, width: u32, height: u32) -> RgbaImage {
    if (width, height) == source.dimensions() {
        return source.clone();
    }
    // Triangle (bilinear) averages every source pixel under the footprint, so text and edges
    // shrink without aliasing, and it is cheap enough to repeat in the `max_bytes` search.
    imageops::resize(source, width, height, FilterType::Triangle)
}

fn encode(image: &RgbaImage) -> Result<Vec<u8>, CaptureError> {
    let mut png = Vec::new();
    PngEncoder::new_with_quality(&mut png, CompressionType::Default, PngFilter::Adaptive)
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            ExtendedColorType::Rgba8,
        )
        .map_err(|error| CaptureError::Encode(error.to_string()))?;
    Ok(png)
}

fn finish(png: Vec<u8>, width: u32, height: u32) -> Capture {
    let sha256 = hex::encode(Sha256::digest(&png));
    Capture {
        png,
        width,
        height,
        sha256,
    }
}

fn corrupt(error: ImageError) -> CaptureError {
    CaptureError::Corrupt(error.to_string())
}

/// The first bytes of a non-PNG input as text, so an error message shows what came back instead.
fn preview(bytes: &[u8]) -> String {
    let start = &bytes[..bytes.len().min(64)];
    String::from_utf8_lossy(start).trim().to_owned()
}

//! Capture processing end to end: test images are drawn in code, encoded as PNG, and pushed
//! through `decode_png` and `process`; the outputs are decoded again and checked pixel by pixel.

use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder, Rgba, RgbaImage};
use lomi_capture::{
    Capture, CaptureError, CaptureOptions, MAX_SAVED_SIDE, Rect, decode_png, inspect_png,
    inspect_png_within, process, top,
};
use lomi_protocol::ErrorCode;
use sha2::{Digest, Sha256};

const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const RED: Rgba<u8> = Rgba([220, 30, 40, 255]);
const GREEN: Rgba<u8> = Rgba([20, 200, 60, 255]);
const BLUE: Rgba<u8> = Rgba([30, 60, 230, 128]);

/// A gradient with light noise (so PNG size tracks pixel count) and three solid rectangles:
/// red at (40,30) 100x80, green at (200,150) 120x100, half-transparent blue at (300,20) 60x60.
fn sample(width: u32, height: u32) -> RgbaImage {
    let mut noise: u32 = 0x2545_f491;
    let mut image = RgbaImage::from_fn(width, height, |x, y| {
        noise = noise.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let jitter = (noise >> 28) as u8;
        Rgba([
            (x * 255 / width.max(1)) as u8 ^ jitter,
            (y * 255 / height.max(1)) as u8,
            ((x + y) % 256) as u8,
            255,
        ])
    });
    for (colour, x0, y0, w, h) in [
        (RED, 40, 30, 100, 80),
        (GREEN, 200, 150, 120, 100),
        (BLUE, 300, 20, 60, 60),
    ] {
        for y in y0..(y0 + h).min(height) {
            for x in x0..(x0 + w).min(width) {
                image.put_pixel(x, y, colour);
            }
        }
    }
    image
}

fn encode(image: &RgbaImage) -> Vec<u8> {
    let mut png = Vec::new();
    PngEncoder::new(&mut png)
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            ExtendedColorType::Rgba8,
        )
        .expect("encoding a test image");
    png
}

/// Runs `process`, checks the invariants every capture keeps, and returns it with its pixels.
fn check(png: &[u8], options: CaptureOptions) -> (Capture, RgbaImage) {
    let capture = process(png, &options)
        .unwrap_or_else(|error| panic!("process({options:?}) failed: {error}"));
    assert!(capture.png.starts_with(SIGNATURE), "output is not a PNG");
    assert_eq!(capture.sha256, hex::encode(Sha256::digest(&capture.png)));
    let decoded = decode_png(&capture.png).expect("the output decodes");
    assert_eq!(
        decoded.dimensions(),
        (capture.width, capture.height),
        "reported size differs from the PNG's, options {options:?}"
    );
    (capture, decoded)
}

fn check_err(png: &[u8], options: CaptureOptions) -> CaptureError {
    match process(png, &options) {
        Ok(capture) => panic!(
            "process({options:?}) succeeded with {}x{}, {} bytes",
            capture.width,
            capture.height,
            capture.png.len()
        ),
        Err(error) => error,
    }
}

fn clip(x: u32, y: u32, width: u32, height: u32) -> Option<Rect> {
    Some(Rect {
        x,
        y,
        width,
        height,
    })
}

#[test]
fn default_options_keep_every_pixel() {
    let source = sample(400, 300);
    let (capture, decoded) = check(&encode(&source), CaptureOptions::default());
    assert_eq!((capture.width, capture.height), (400, 300));
    assert!(decoded == source, "pixels changed without clip or scale");
}

#[test]
fn clip_keeps_the_clipped_pixels_exactly() {
    let source = sample(400, 300);
    let options = CaptureOptions {
        clip: clip(30, 20, 150, 120),
        ..Default::default()
    };
    let (capture, decoded) = check(&encode(&source), options);
    assert_eq!((capture.width, capture.height), (150, 120));
    // Source (50,40) is inside the red rectangle; in the clip it is at (20,20).
    assert_eq!(*decoded.get_pixel(20, 20), RED);
    for (x, y, pixel) in decoded.enumerate_pixels() {
        assert_eq!(pixel, source.get_pixel(x + 30, y + 20), "pixel ({x},{y})");
    }
    // The whole image is a valid clip too.
    let options = CaptureOptions {
        clip: clip(0, 0, 400, 300),
        ..Default::default()
    };
    assert_eq!(check(&encode(&source), options).1, source);
}

#[test]
fn scaled_sizes_round_half_away_from_zero_and_never_reach_zero() {
    // (source size, scale, expected size): max(1, round(side * scale)) per side.
    for ((width, height), scale, expected) in [
        ((400, 300), 0.5, (200, 150)),
        ((401, 301), 0.5, (201, 151)),
        ((400, 300), 0.333, (133, 100)),
        ((400, 300), 1.0, (400, 300)),
        ((15, 9), 0.05, (1, 1)),
    ] {
        let options = CaptureOptions {
            scale: Some(scale),
            ..Default::default()
        };
        let (capture, _) = check(&encode(&sample(width, height)), options);
        assert_eq!(
            (capture.width, capture.height),
            expected,
            "{width}x{height} at scale {scale}"
        );
    }
}

#[test]
fn clip_then_scale_keeps_solid_colours() {
    let options = CaptureOptions {
        clip: clip(200, 150, 200, 150),
        scale: Some(0.5),
        ..Default::default()
    };
    let (capture, decoded) = check(&encode(&sample(400, 300)), options);
    assert_eq!((capture.width, capture.height), (100, 75));
    // The green rectangle fills clip (0..120, 0..100), i.e. scaled (0..60, 0..50).
    let pixel = decoded.get_pixel(30, 25);
    for (got, want) in pixel.0.iter().zip(GREEN.0) {
        assert!(got.abs_diff(want) <= 1, "{pixel:?} is not {GREEN:?}");
    }
}

#[test]
fn clips_outside_the_image_are_refused_with_its_size() {
    let png = encode(&sample(400, 300));
    for bad in [
        clip(300, 0, 101, 10),
        clip(0, 250, 10, 51),
        clip(400, 0, 1, 1),
        clip(0, 0, 0, 10),
        clip(0, 0, 10, 0),
        clip(u32::MAX, 0, 2, 2),
    ] {
        let error = check_err(
            &png,
            CaptureOptions {
                clip: bad,
                ..Default::default()
            },
        );
        assert!(
            matches!(error, CaptureError::InvalidClip { .. }),
            "{bad:?}: {error}"
        );
        assert_eq!(error.code(), ErrorCode::InvalidArgument);
        assert!(error.to_string().contains("400x300"), "{error}");
    }
}

#[test]
fn scales_outside_the_range_are_refused() {
    let png = encode(&sample(40, 30));
    for scale in [0.0, 0.04, 1.01, 2.0, -0.5, f32::NAN, f32::INFINITY] {
        let error = check_err(
            &png,
            CaptureOptions {
                scale: Some(scale),
                ..Default::default()
            },
        );
        assert!(
            matches!(error, CaptureError::InvalidScale { .. }),
            "{scale}: {error}"
        );
        assert_eq!(error.code(), ErrorCode::InvalidArgument);
    }
}

#[test]
fn max_bytes_shrinks_the_image_until_it_fits() {
    let png = encode(&sample(400, 300));
    let full = check(&png, CaptureOptions::default()).0;
    let max_bytes = full.png.len() / 3;
    let options = CaptureOptions {
        max_bytes: Some(max_bytes),
        ..Default::default()
    };
    let (capture, _) = check(&png, options);
    assert!(
        capture.png.len() <= max_bytes,
        "{} > {max_bytes}",
        capture.png.len()
    );
    assert!(capture.width < 400 && capture.height < 300);
    // A budget the full image already meets changes nothing.
    let options = CaptureOptions {
        max_bytes: Some(full.png.len()),
        ..Default::default()
    };
    assert_eq!(check(&png, options).0, full);
}

#[test]
fn an_impossible_max_bytes_reports_the_smallest_size_reached() {
    let error = check_err(
        &encode(&sample(400, 300)),
        CaptureOptions {
            max_bytes: Some(50),
            ..Default::default()
        },
    );
    match &error {
        CaptureError::TooLarge {
            max_bytes: 50,
            smallest,
            width: 20,
            height: 15,
        } => assert!(*smallest > 50),
        other => panic!("expected TooLarge at the 0.05 floor (20x15), got {other:?}"),
    }
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
}

#[test]
fn bytes_that_are_not_a_png_say_what_they_are() {
    for input in [&b"error: device 'emulator-5554' not found\n"[..], b""] {
        let error = check_err(input, CaptureOptions::default());
        assert!(matches!(error, CaptureError::NotPng { .. }), "{error}");
        assert_eq!(error.code(), ErrorCode::Internal);
    }
    let error = decode_png(b"error: device 'emulator-5554' not found\n").expect_err("not a PNG");
    assert!(
        error.to_string().contains("device 'emulator-5554'"),
        "{error}"
    );
}

#[test]
fn truncated_pngs_are_corrupt() {
    let png = encode(&sample(400, 300));
    // Cuts inside the header, the middle of the pixel data, and the last IDAT chunk. (A PNG that
    // lacks only its 12-byte IEND trailer still has every pixel and decodes.)
    for length in [SIGNATURE.len(), 20, png.len() / 2, png.len() - 20] {
        let error = check_err(&png[..length], CaptureOptions::default());
        assert!(
            matches!(error, CaptureError::Corrupt(_)),
            "cut at {length}: {error}"
        );
        assert_eq!(error.code(), ErrorCode::Internal);
    }
}

#[test]
fn absurd_dimensions_are_refused() {
    // 16,385 x 1 is a small file, but one side is over the limit.
    let png = encode(&RgbaImage::new(16_385, 1));
    let error = decode_png(&png).expect_err("over the side limit");
    assert!(
        matches!(
            error,
            CaptureError::Oversized {
                width: 16_385,
                height: 1
            }
        ),
        "{error}"
    );
    assert_eq!(error.code(), ErrorCode::Internal);
}

#[test]
fn a_comparison_marks_exactly_the_changed_pixels() {
    let before = sample(40, 30);
    let mut after = before.clone();
    for (x, y) in [(3, 4), (10, 20), (39, 29)] {
        after.put_pixel(x, y, Rgba([1, 2, 3, 255]));
    }
    let same = lomi_capture::compare(&encode(&before), &encode(&before)).expect("compare");
    assert_eq!((same.changed, same.total, same.diff_png), (0, 1200, None));

    let difference = lomi_capture::compare(&encode(&before), &encode(&after)).expect("compare");
    assert_eq!((difference.changed, difference.total), (3, 1200));
    assert!((difference.ratio() - 3.0 / 1200.0).abs() < 1e-12);
    let diff = decode_png(&difference.diff_png.expect("a diff")).expect("a PNG");
    let marked: Vec<(u32, u32)> = diff
        .enumerate_pixels()
        .filter(|(_, _, pixel)| pixel.0[3] != 0)
        .map(|(x, y, _)| (x, y))
        .collect();
    assert_eq!(marked, [(3, 4), (10, 20), (39, 29)]);

    // A taller capture: the rows the old one lacks are all changed.
    let taller =
        lomi_capture::compare(&encode(&before), &encode(&sample(40, 31))).expect("compare");
    assert_eq!(taller.total, 40 * 31);
    assert!(taller.changed >= 40, "{taller:?}");
}

#[test]
fn the_top_of_a_tall_image_keeps_its_full_width_and_exact_pixels() {
    // Taller than a capture decodes whole (MAX_SIDE), as a long page saved into a project is.
    let tall = sample(64, 20_000);
    let png = encode(&tall);
    assert!(matches!(
        inspect_png(&png),
        Err(CaptureError::Oversized { .. })
    ));
    assert_eq!(
        inspect_png_within(&png, MAX_SAVED_SIDE).expect("kept whole"),
        (64, 20_000)
    );

    let cut = top(&png, 300, usize::MAX).expect("the top");
    assert_eq!((cut.width, cut.height), (64, 300));
    assert_eq!(cut.sha256, hex::encode(Sha256::digest(&cut.png)));
    let pixels = decode_png(&cut.png).expect("a PNG");
    for (x, y, pixel) in pixels.enumerate_pixels() {
        assert_eq!(pixel, tall.get_pixel(x, y), "pixel ({x}, {y})");
    }
}

#[test]
fn the_top_keeps_fewer_rows_until_it_fits_the_bytes() {
    let png = encode(&sample(200, 2_000));
    let whole = top(&png, 2_000, usize::MAX).expect("within both limits");
    assert_eq!(
        whole.png, png,
        "a PNG within both limits comes back as it is"
    );

    let budget = png.len() / 4;
    let cut = top(&png, 2_000, budget).expect("the top");
    assert!(cut.png.len() <= budget, "{} > {budget}", cut.png.len());
    assert_eq!(cut.width, 200, "never narrower");
    assert!(cut.height < 2_000 && cut.height > 100, "{}", cut.height);

    let error = top(&png, 2_000, 10).expect_err("no row fits in 10 bytes");
    assert!(matches!(error, CaptureError::TooLarge { .. }), "{error}");
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
}

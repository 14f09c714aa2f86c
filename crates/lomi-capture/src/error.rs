//! Why a capture failed, one variant per cause, each with the protocol error code it answers with.

use lomi_protocol::ErrorCode;

use crate::Rect;

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(
        "clip x={} y={} width={} height={} must be non-empty and lie inside the {image_width}x{image_height} image",
        clip.x, clip.y, clip.width, clip.height
    )]
    InvalidClip {
        clip: Rect,
        image_width: u32,
        image_height: u32,
    },
    #[error(
        "scale {scale} must be between {} and {}",
        crate::MIN_SCALE,
        crate::MAX_SCALE
    )]
    InvalidScale { scale: f32 },
    #[error("the capture is not a PNG image; it starts with {start:?}")]
    NotPng { start: String },
    #[error("the capture is not a readable PNG: {0}")]
    Corrupt(String),
    #[error(
        "the capture is {width}x{height}; captures larger than {} px a side are refused",
        crate::MAX_SIDE
    )]
    Oversized { width: u32, height: u32 },
    #[error(
        "the capture does not fit in {max_bytes} bytes; the smallest reached was {smallest} bytes at {width}x{height}; raise maxBytes or clip a smaller area"
    )]
    TooLarge {
        max_bytes: usize,
        smallest: usize,
        width: u32,
        height: u32,
    },
    #[error("could not encode the capture as PNG: {0}")]
    Encode(String),
}

impl CaptureError {
    /// The protocol code for this error.
    ///
    /// `TooLarge` is `INVALID_ARGUMENT`, not `RESOURCE_EXHAUSTED`: the caller fixes it by asking
    /// again with a larger `maxBytes` or a smaller clip, while `RESOURCE_EXHAUSTED` in the
    /// protocol means the store needs maintenance. The source image's own faults (not a PNG,
    /// corrupt, absurdly large) and encoder failures are `INTERNAL`: the caller did nothing wrong.
    pub fn code(&self) -> ErrorCode {
        match self {
            CaptureError::InvalidClip { .. }
            | CaptureError::InvalidScale { .. }
            | CaptureError::TooLarge { .. } => ErrorCode::InvalidArgument,
            CaptureError::NotPng { .. }
            | CaptureError::Corrupt(_)
            | CaptureError::Oversized { .. }
            | CaptureError::Encode(_) => ErrorCode::Internal,
        }
    }
}

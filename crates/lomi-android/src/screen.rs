//! The screen that input coordinates are checked against: the size `wm size` reports (always
//! the natural orientation's, as on a phone) turned by the display's rotation when Lomi knows it.

/// A panel's screen as input sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Screen {
    /// Width and height in the natural orientation (`wm size`).
    pub natural: (u32, u32),
    /// Quarter turns from the natural orientation (0 to 3), or `None` while auto-rotate is on:
    /// then the display turns with the device and only a read of the device would say how.
    pub rotation: Option<u32>,
}

impl Screen {
    /// Width and height as `input tap` measures them now, when the rotation is known.
    pub fn size(&self) -> Option<(u32, u32)> {
        let (width, height) = self.natural;
        self.rotation.map(|rotation| {
            if rotation % 2 == 1 {
                (height, width)
            } else {
                (width, height)
            }
        })
    }

    /// The size to report: the current orientation's when known, else the natural one.
    pub fn reported(&self) -> (u32, u32) {
        self.size().unwrap_or(self.natural)
    }

    /// Whether `(x, y)` is on the screen; the refusal says which screen it was checked against.
    /// With the rotation unknown, a point is refused only when it is off the screen in both
    /// orientations, so a valid tap is never refused.
    pub fn check(&self, x: u32, y: u32) -> Result<(), String> {
        let (width, height) = self.natural;
        match (self.size(), self.rotation) {
            (Some((w, h)), Some(rotation)) => {
                if x < w && y < h {
                    Ok(())
                } else {
                    let orientation = if rotation % 2 == 1 {
                        "landscape"
                    } else {
                        "portrait"
                    };
                    Err(format!(
                        "({x}, {y}) is off the {w}x{h} screen (rotation {rotation}, {orientation}); x must be below {w} and y below {h}. If the device was turned since, lomi_android_orientation reads it again"
                    ))
                }
            }
            _ => {
                if (x < width && y < height) || (x < height && y < width) {
                    Ok(())
                } else {
                    Err(format!(
                        "({x}, {y}) is off the {width}x{height} screen in either orientation (auto-rotate is on, so Lomi accepts both); give x and y within {width}x{height} or {height}x{width}"
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(rotation: Option<u32>, point: (u32, u32), on_screen: bool) {
        let screen = Screen {
            natural: (360, 640),
            rotation,
        };
        assert_eq!(
            screen.check(point.0, point.1).is_ok(),
            on_screen,
            "{rotation:?} {point:?}"
        );
    }

    #[test]
    fn points_are_checked_against_the_current_orientation() {
        check(Some(0), (359, 639), true);
        check(Some(0), (500, 100), false);
        check(Some(1), (500, 100), true);
        check(Some(1), (100, 500), false);
        check(Some(3), (639, 359), true);
        check(Some(2), (100, 500), true);
        // Unknown (auto-rotate): either orientation will do, neither is off both.
        check(None, (500, 100), true);
        check(None, (100, 500), true);
        check(None, (500, 500), false);
        let landscape = Screen {
            natural: (360, 640),
            rotation: Some(1),
        };
        assert_eq!(landscape.reported(), (640, 360));
        assert!(
            landscape
                .check(100, 500)
                .is_err_and(|message| message.contains("640x360 screen (rotation 1, landscape)"))
        );
    }
}

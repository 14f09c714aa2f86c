//! The virtual screen: what the device has been told (taps, text, keys, activities) and how that
//! looks as a PNG and as a `uiautomator` hierarchy.

use std::io::Cursor;

use image::{ImageFormat, Rgb, RgbImage};

pub const SCREEN_WIDTH: u32 = 360;
pub const SCREEN_HEIGHT: u32 = 640;

/// The button's bounds as `uiautomator` reports them: left, top, right, bottom (right/bottom
/// exclusive).
pub const BUTTON_BOUNDS: [u32; 4] = [40, 200, 320, 280];
const TITLE_BAR_HEIGHT: u32 = 56;
const TEXT_FIELD_BOUNDS: [u32; 4] = [40, 320, 320, 360];

/// Everything the fixture has received, for tests to assert on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FixtureState {
    /// `input tap X Y`, in order, wherever they landed.
    pub taps: Vec<(f32, f32)>,
    /// `input swipe X1 Y1 X2 Y2 [MS]`, in order.
    pub swipes: Vec<[f32; 4]>,
    /// `input text …`, each as the literal text after shell unquoting (`%s` becomes a space).
    pub texts: Vec<String>,
    /// `input keyevent …`, each key as given (a number or a `KEYCODE_` name).
    pub keyevents: Vec<String>,
    /// `am start -n …` components, in order.
    pub activities: Vec<String>,
    /// Whether the button is pressed; each tap inside it toggles this.
    pub button_pressed: bool,
    /// This boot's id (`/proc/sys/kernel/random/boot_id`), new at every start.
    pub boot_id: String,
    /// How many of the next `uiautomator dump`s fail because the UI "never goes idle", as they
    /// do on a device while an animation runs (`setprop lomi.fixture.busy_dumps N`).
    pub busy_dumps: u32,
    /// Files written through the sync service, by absolute path.
    pub files: std::collections::BTreeMap<String, Vec<u8>>,
    /// Installed packages by name (`pm`).
    pub packages: std::collections::BTreeMap<String, crate::phone::Package>,
    /// Running app processes: package → pid.
    pub processes: std::collections::BTreeMap<String, u32>,
    pub(crate) next_pid: u32,
    /// The device log, oldest first.
    pub log: Vec<crate::phone::LogLine>,
    /// `settings … system user_rotation` (0 to 3, quarter turns).
    pub user_rotation: u32,
    /// `settings … system accelerometer_rotation` (auto-rotate).
    pub auto_rotate: bool,
    /// How long each `pm install` takes (`setprop lomi.fixture.install_ms MS`).
    pub install_ms: u64,
    /// How long the sync service waits before taking each packet the host writes and before
    /// sending each of its own (`setprop lomi.fixture.sync_ms MS`).
    pub sync_ms: u64,
}

/// A random version-4-shaped UUID from the standard library's randomly keyed hasher.
pub(crate) fn new_boot_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let half = |salt: u64| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(salt);
        if let Ok(elapsed) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            hasher.write_u128(elapsed.as_nanos());
        }
        hasher.finish()
    };
    let bits = (u128::from(half(1)) << 64) | u128::from(half(2));
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

impl FixtureState {
    pub(crate) fn with_boot_id(boot_id: String) -> FixtureState {
        let mut state = FixtureState {
            boot_id,
            auto_rotate: true,
            ..FixtureState::default()
        };
        state.boot();
        state
    }

    pub(crate) fn tap(&mut self, x: f32, y: f32) {
        self.taps.push((x, y));
        let [left, top, right, bottom] = BUTTON_BOUNDS.map(|edge| edge as f32);
        if (left..right).contains(&x) && (top..bottom).contains(&y) {
            self.button_pressed = !self.button_pressed;
        }
    }

    fn button_text(&self) -> &'static str {
        if self.button_pressed {
            "Pressed"
        } else {
            "Press me"
        }
    }

    fn typed_text(&self) -> String {
        self.texts.concat()
    }

    /// The screen as PNG bytes: a title bar, the button (blue, green once pressed), and a text
    /// field whose bar grows with the typed text.
    pub(crate) fn screenshot_png(&self) -> Vec<u8> {
        let mut screen = RgbImage::from_pixel(SCREEN_WIDTH, SCREEN_HEIGHT, Rgb([250, 250, 250]));
        fill(
            &mut screen,
            [0, 0, SCREEN_WIDTH, TITLE_BAR_HEIGHT],
            Rgb([33, 33, 120]),
        );
        let button_colour = if self.button_pressed {
            Rgb([40, 160, 70])
        } else {
            Rgb([30, 110, 220])
        };
        fill(&mut screen, BUTTON_BOUNDS, button_colour);
        fill(&mut screen, TEXT_FIELD_BOUNDS, Rgb([220, 220, 220]));
        let [left, top, right, bottom] = TEXT_FIELD_BOUNDS;
        let typed = u32::try_from(self.typed_text().chars().count()).unwrap_or(u32::MAX);
        let bar_right = left.saturating_add(typed.saturating_mul(6)).min(right);
        fill(
            &mut screen,
            [left, top + 12, bar_right, bottom - 12],
            Rgb([200, 80, 40]),
        );
        let mut png = Vec::new();
        // Encoding an in-memory RGB image into a Vec cannot fail short of running out of memory.
        if let Err(error) = screen.write_to(&mut Cursor::new(&mut png), ImageFormat::Png) {
            panic!("encoding the fixture's screen as PNG: {error}");
        }
        png
    }

    /// The hierarchy `uiautomator dump` prints, in its format.
    pub(crate) fn ui_hierarchy_xml(&self) -> String {
        let root = node(
            0,
            "",
            "",
            "android.widget.FrameLayout",
            false,
            [0, 0, SCREEN_WIDTH, SCREEN_HEIGHT],
        );
        let title = node(
            0,
            "Lomi Fixture",
            "fixture:id/title",
            "android.widget.TextView",
            false,
            [0, 0, SCREEN_WIDTH, TITLE_BAR_HEIGHT],
        );
        let button = node(
            1,
            self.button_text(),
            "fixture:id/button",
            "android.widget.Button",
            true,
            BUTTON_BOUNDS,
        );
        let field = node(
            2,
            &self.typed_text(),
            "fixture:id/text",
            "android.widget.EditText",
            true,
            TEXT_FIELD_BOUNDS,
        );
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{root}>{title}/>{button}/>{field}/></node></hierarchy>"
        )
    }
}

/// An unclosed `<node …` element; the caller closes it with `/>` or `>…</node>`.
fn node(
    index: u32,
    text: &str,
    resource_id: &str,
    class: &str,
    clickable: bool,
    [left, top, right, bottom]: [u32; 4],
) -> String {
    let text = xml_escape(text);
    format!(
        "<node index=\"{index}\" text=\"{text}\" resource-id=\"{resource_id}\" class=\"{class}\" package=\"fixture\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"{clickable}\" enabled=\"true\" focusable=\"{clickable}\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[{left},{top}][{right},{bottom}]\""
    )
}

fn xml_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            other => escaped.push(other),
        }
    }
    escaped
}

fn fill(screen: &mut RgbImage, [left, top, right, bottom]: [u32; 4], colour: Rgb<u8>) {
    for y in top..bottom.min(SCREEN_HEIGHT) {
        for x in left..right.min(SCREEN_WIDTH) {
            screen.put_pixel(x, y, colour);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_inside_the_button_toggles_it_and_outside_does_not() {
        let mut state = FixtureState::default();
        state.tap(10.0, 10.0);
        assert!(!state.button_pressed);
        state.tap(100.0, 240.0);
        assert!(state.button_pressed);
        assert!(state.ui_hierarchy_xml().contains("text=\"Pressed\""));
        state.tap(319.5, 279.5);
        assert!(!state.button_pressed);
        assert_eq!(state.taps.len(), 3);
    }

    #[test]
    fn typed_text_is_escaped_in_the_hierarchy() {
        let state = FixtureState {
            texts: vec!["a<b & \"c\"".into()],
            ..FixtureState::default()
        };
        assert!(
            state
                .ui_hierarchy_xml()
                .contains("text=\"a&lt;b &amp; &quot;c&quot;\"")
        );
    }
}

//! The services a stream can OPEN: `sync:` (see [`crate::sync`]) and `shell:…` and `exec:…`
//! commands, answered from the virtual screen and the phone's contents (see [`crate::phone`]). There is no real shell: the command line is split into words with POSIX quoting, and
//! shell syntax a real device would interpret (`;`, `|`, `$`, …) is refused, so a caller that
//! forgets to quote is caught rather than silently passing.

use std::time::Duration;

use crate::screen::{FixtureState, SCREEN_HEIGHT, SCREEN_WIDTH};

/// What a service answers: its whole output, sent after `duration` (the time the command takes
/// on the device, such as a slow swipe).
pub(crate) struct Reply {
    pub output: Vec<u8>,
    pub duration: Duration,
}

/// The longest a swipe may take, so a caller's typo cannot park the device for hours.
const MAX_SWIPE: Duration = Duration::from_secs(60);

const PROPERTIES: [(&str, &str); 6] = [
    ("ro.build.version.release", "14"),
    ("ro.build.version.sdk", "34"),
    ("ro.product.device", "lomi"),
    ("ro.product.model", "LomiFixture"),
    ("ro.product.name", "lomi_fixture"),
    ("ro.serialno", "LOMIFIXTURE0001"),
];

/// How a service starts.
pub(crate) enum Opened {
    /// Its whole answer at once.
    Reply(Reply),
    /// The file sync protocol.
    Sync,
    /// A command that reads `length` bytes of stdin first (a streamed install).
    Stdin { words: Vec<String>, length: usize },
}

/// How `service` starts, or `None` when there is no such service (the stream is then refused
/// with CLSE).
pub(crate) fn open(service: &str, state: &mut FixtureState) -> Option<Opened> {
    if service == "sync:" {
        return Some(Opened::Sync);
    }
    let command = service
        .strip_prefix("exec:")
        .or_else(|| shell_command(service))?;
    if let Ok(words) = split_words(logcat_command(command))
        && let Some(length) = streamed_install(&words)
    {
        return Some(Opened::Stdin { words, length });
    }
    run(service, state).map(Opened::Reply)
}

/// What a command that read its stdin (a streamed install) prints.
pub(crate) fn with_stdin(words: &[String], stdin: &[u8], state: &mut FixtureState) -> Vec<u8> {
    let replace = words.iter().any(|word| word == "-r");
    state.install(stdin, replace).into_bytes()
}

/// `cmd package install [OPTIONS] -S SIZE` (or `pm install … -S SIZE`): the APK's size.
fn streamed_install(words: &[String]) -> Option<usize> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let options = match words.as_slice() {
        ["cmd", "package", "install", options @ ..] | ["pm", "install", options @ ..] => options,
        _ => return None,
    };
    let at = options.iter().position(|word| *word == "-S")?;
    options.get(at + 1)?.parse().ok()
}

/// The two bits of shell syntax the `adb` client itself sends: `adb logcat` asks for
/// `export ANDROID_LOG_TAGS="…" ; exec logcat …` (the fixture runs the `logcat …` part), and
/// `adb install` removes its pushed APK with `rm PATH </dev/null`.
fn logcat_command(command: &str) -> &str {
    let command = command.strip_suffix(" </dev/null").unwrap_or(command);
    command
        .strip_prefix("export ANDROID_LOG_TAGS=")
        .and_then(|rest| rest.split_once("; exec "))
        .map_or(command, |(_, logcat)| logcat)
}

/// The answer to a `shell:` or `exec:` service, or `None` when it is neither.
pub(crate) fn run(service: &str, state: &mut FixtureState) -> Option<Reply> {
    let command = service
        .strip_prefix("exec:")
        .or_else(|| shell_command(service))?;
    let command = logcat_command(command);
    Some(match split_words(command) {
        Ok(words) => {
            // `setprop lomi.fixture.install_ms MS` makes each `pm install` take that long, so a
            // test can unplug the device while the package manager works.
            let installing = words.len() > 2 && words[0] == "pm" && words[1] == "install";
            let extra = if installing {
                Duration::from_millis(state.install_ms)
            } else {
                Duration::ZERO
            };
            Reply {
                duration: duration(&words) + extra,
                output: run_command(&words, state),
            }
        }
        Err(error) => Reply {
            output: format!("/system/bin/sh: {error}\n").into_bytes(),
            duration: Duration::ZERO,
        },
    })
}

/// How long the command takes: `input swipe … MS` takes MS milliseconds, like on a device.
fn duration(words: &[String]) -> Duration {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["input", "swipe", _, _, _, _, milliseconds] => milliseconds
            .parse::<u64>()
            .map_or(Duration::ZERO, Duration::from_millis)
            .min(MAX_SWIPE),
        _ => Duration::ZERO,
    }
}

/// `shell:CMD` or `shell,ARGS:CMD` (ARGS such as `raw` or `v2`) → `CMD`.
fn shell_command(service: &str) -> Option<&str> {
    let rest = service.strip_prefix("shell")?;
    if let Some(command) = rest.strip_prefix(':') {
        return Some(command);
    }
    let (_args, command) = rest.strip_prefix(',')?.split_once(':')?;
    Some(command)
}

fn run_command(words: &[String], state: &mut FixtureState) -> Vec<u8> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let text = match words.as_slice() {
        ["getprop"] => PROPERTIES
            .iter()
            .map(|(key, value)| format!("[{key}]: [{value}]\n"))
            .collect(),
        ["getprop", key] => {
            let value = PROPERTIES
                .iter()
                .find(|(name, _)| name == key)
                .map_or("", |(_, value)| value);
            format!("{value}\n")
        }
        ["cat", "/proc/sys/kernel/random/boot_id"] => format!("{}\n", state.boot_id),
        ["wm", "size"] => format!("Physical size: {SCREEN_WIDTH}x{SCREEN_HEIGHT}\n"),
        ["screencap", "-p"] => return state.screenshot_png(),
        ["input", "tap", x, y] => match (coordinate(x), coordinate(y)) {
            (Some(x), Some(y)) => {
                state.tap(x, y);
                String::new()
            }
            _ => format!("Error: invalid coordinates {x} {y}\n"),
        },
        ["input", "swipe", x1, y1, x2, y2, rest @ ..] if rest.len() <= 1 => {
            match [x1, y1, x2, y2].map(|word| coordinate(word)) {
                [Some(x1), Some(y1), Some(x2), Some(y2)] => {
                    state.swipes.push([x1, y1, x2, y2]);
                    String::new()
                }
                _ => "Error: invalid swipe coordinates\n".to_owned(),
            }
        }
        // Android's `input text` types `%s` as a space; several words are joined by spaces.
        ["input", "text", text @ ..] if !text.is_empty() => {
            state.texts.push(text.join(" ").replace("%s", " "));
            String::new()
        }
        ["input", "keyevent", keys @ ..] if !keys.is_empty() => {
            state
                .keyevents
                .extend(keys.iter().map(|key| (*key).to_owned()));
            String::new()
        }
        ["am", "start", "-n", component] => {
            state.activities.push((*component).to_owned());
            let (package, activity) = component.split_once('/').unwrap_or((component, ""));
            state.started(&format!("cmp={component}"), Some(package), activity);
            format!("Starting: Intent {{ cmp={component} }}\n")
        }
        ["am", "start", options @ ..] if !options.is_empty() => match intent(options) {
            Ok(intent) => {
                state.activities.push(intent.clone());
                state.started(&intent, None, "");
                format!("Starting: Intent {{ {intent} }}\n")
            }
            Err(error) => format!("Error: {error}\n"),
        },
        ["setprop", "lomi.fixture.sync_ms", milliseconds] => match milliseconds.parse() {
            Ok(milliseconds) => {
                state.sync_ms = milliseconds;
                String::new()
            }
            Err(_) => format!("setprop: {milliseconds} is not a count\n"),
        },
        ["setprop", "lomi.fixture.install_ms", milliseconds] => match milliseconds.parse() {
            Ok(milliseconds) => {
                state.install_ms = milliseconds;
                String::new()
            }
            Err(_) => format!("setprop: {milliseconds} is not a count\n"),
        },
        ["setprop", "lomi.fixture.busy_dumps", count] => match count.parse() {
            Ok(count) => {
                state.busy_dumps = count;
                String::new()
            }
            Err(_) => format!("setprop: {count} is not a count\n"),
        },
        ["uiautomator", "dump", "/dev/tty"] if state.busy_dumps > 0 => {
            state.busy_dumps -= 1;
            "ERROR: could not get idle state.\n".to_owned()
        }
        ["uiautomator", "dump", "/dev/tty"] => {
            format!(
                "{}UI hierchary dumped to: /dev/tty\n",
                state.ui_hierarchy_xml()
            )
        }
        ["uiautomator", "dump", ..] => {
            "fixture: only `uiautomator dump /dev/tty` is supported\n".to_owned()
        }
        ["wm", "density"] => "Physical density: 320\n".to_owned(),
        ["am", "force-stop", package] => {
            state.force_stop(package);
            String::new()
        }
        ["pidof", package] => state
            .processes
            .get(*package)
            .map_or_else(String::new, |pid| format!("{pid}\n")),
        ["pm" | "cmd", ..] => package_manager(&words, state),
        ["dumpsys", "package", name] => match state.packages.get(*name) {
            Some(package) => format!(
                "Packages:\n  Package [{name}] (1a2b3c):\n    versionCode={} minSdk=21 targetSdk=34\n    versionName={}\n",
                package.version_code, package.version_name
            ),
            None => format!("Unable to find package: {name}\n"),
        },
        ["rm", "-f", path] | ["rm", path] => {
            state.files.remove(*path);
            String::new()
        }
        ["sha256sum", path] => match state.files.get(*path) {
            Some(bytes) => format!("{}  {path}\n", sha256_hex(bytes)),
            None => format!("sha256sum: {path}: No such file or directory\n"),
        },
        ["settings", "get", "system", "user_rotation"] => format!("{}\n", state.user_rotation),
        ["settings", "get", "system", "accelerometer_rotation"] => {
            format!("{}\n", u8::from(state.auto_rotate))
        }
        ["settings", "put", "system", "user_rotation", value] => match value.parse() {
            Ok(rotation @ 0..=3) => {
                state.user_rotation = rotation;
                String::new()
            }
            _ => format!("Error: bad rotation {value}\n"),
        },
        [
            "settings",
            "put",
            "system",
            "accelerometer_rotation",
            value @ ("0" | "1"),
        ] => {
            state.auto_rotate = *value == "1";
            String::new()
        }
        ["logcat", options @ ..] => match state.logcat(options) {
            Ok(text) => text,
            Err(error) => format!("logcat: {error}\n"),
        },
        [] => String::new(),
        [program, ..] => format!("/system/bin/sh: {program}: inaccessible or not found\n"),
    };
    text.into_bytes()
}

/// `pm …` and `cmd package …`: list, install (a file on the device) and uninstall.
fn package_manager(words: &[&str], state: &mut FixtureState) -> String {
    let arguments = match words {
        ["pm", rest @ ..] | ["cmd", "package", rest @ ..] => rest,
        _ => {
            return format!(
                "/system/bin/sh: {}: inaccessible or not found\n",
                words.join(" ")
            );
        }
    };
    match arguments {
        ["list", "packages", options @ ..] => {
            let third_party = options.contains(&"-3");
            let versions = options.contains(&"--show-versioncode");
            let filter = options.iter().find(|option| !option.starts_with('-'));
            state
                .packages
                .iter()
                .filter(|(name, package)| {
                    !(third_party && package.system) && filter.is_none_or(|f| name.contains(*f))
                })
                .map(|(name, package)| {
                    if versions {
                        format!("package:{name} versionCode:{}\n", package.version_code)
                    } else {
                        format!("package:{name}\n")
                    }
                })
                .collect()
        }
        ["install", options @ .., path]
            if options.iter().all(|o| ["-r", "-d", "-g", "-t"].contains(o)) =>
        {
            match state.files.get(*path).cloned() {
                Some(apk) => state.install(&apk, options.contains(&"-r")),
                None => format!(
                    "Error: Unable to open file: {path}\nConsider using a file under /data/local/tmp/\n"
                ),
            }
        }
        ["uninstall", name] => state.uninstall(name),
        _ => format!("Error: unknown command {}\n", arguments.join(" ")),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `-a ACTION`, `-d DATA`, `-p PACKAGE` in any order (an action is required), described the
/// way `am` prints an intent: `act=… dat=… pkg=…`.
fn intent(options: &[&str]) -> Result<String, String> {
    let (mut action, mut data, mut package) = (None, None, None);
    let mut words = options.iter();
    while let Some(flag) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| format!("option {flag} needs a value"))?;
        match *flag {
            "-a" => action = Some(value),
            "-d" => data = Some(value),
            "-p" => package = Some(value),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let action = action.ok_or("an intent needs an action (-a)")?;
    let mut description = format!("act={action}");
    if let Some(data) = data {
        description.push_str(&format!(" dat={data}"));
    }
    if let Some(package) = package {
        description.push_str(&format!(" pkg={package}"));
    }
    Ok(description)
}

fn coordinate(word: &str) -> Option<f32> {
    word.parse::<f32>().ok().filter(|value| value.is_finite())
}

/// Splits a command line the way `sh` would for plain words: whitespace separates, single quotes
/// are literal, double quotes allow `\"` `\\` escapes, a backslash escapes one character.
/// Anything a shell would expand or treat as an operator is an error.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    const OPERATORS: &str = ";|&<>()$`*?[]{}~#";
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut characters = line.chars();
    while let Some(character) = characters.next() {
        match character {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match characters.next() {
                        Some('\'') => break,
                        Some(other) => current.push(other),
                        None => return Err("syntax error: unterminated quoted string".into()),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match characters.next() {
                        Some('"') => break,
                        Some('\\') => match characters.next() {
                            Some(escaped @ ('"' | '\\' | '$' | '`')) => current.push(escaped),
                            Some(other) => {
                                current.push('\\');
                                current.push(other);
                            }
                            None => return Err("syntax error: unterminated quoted string".into()),
                        },
                        Some(expanding @ ('$' | '`')) => {
                            return Err(format!(
                                "fixture runs no shell: unescaped '{expanding}' in double quotes"
                            ));
                        }
                        Some(other) => current.push(other),
                        None => return Err("syntax error: unterminated quoted string".into()),
                    }
                }
            }
            '\\' => match characters.next() {
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
                None => return Err("syntax error: trailing backslash".into()),
            },
            operator if OPERATORS.contains(operator) => {
                return Err(format!("fixture runs no shell: unquoted '{operator}'"));
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(service: &str, state: &mut FixtureState) -> String {
        let reply = run(service, state).expect("a known service");
        String::from_utf8(reply.output).expect("text output")
    }

    #[test]
    fn shell_words_keep_quoted_metacharacters_literal() {
        let check = |line: &str, expected: &[&str]| {
            assert_eq!(
                split_words(line),
                Ok(expected.iter().map(|word| (*word).to_owned()).collect()),
                "{line}"
            )
        };
        check(
            "input text 'a;b|c $HOME'",
            &["input", "text", "a;b|c $HOME"],
        );
        check(
            r#"input text "it's \"x\"""#,
            &["input", "text", "it's \"x\""],
        );
        check(r"input text a\;b", &["input", "text", "a;b"]);
        check("getprop  ''", &["getprop", ""]);
        assert!(split_words("input text a;reboot").is_err());
        assert!(split_words("input text \"$(reboot)\"").is_err());
        assert!(split_words("input text 'open").is_err());
    }

    #[test]
    fn services_answer_like_a_device() {
        let mut state = FixtureState::default();
        assert_eq!(
            output("shell:getprop ro.product.model", &mut state),
            "LomiFixture\n"
        );
        assert_eq!(
            output("shell,raw:getprop ro.build.version.sdk", &mut state),
            "34\n"
        );
        assert!(output("shell:getprop", &mut state).contains("[ro.serialno]: [LOMIFIXTURE0001]\n"));
        assert_eq!(
            output("shell:wm size", &mut state),
            "Physical size: 360x640\n"
        );
        assert_eq!(
            output("shell:am start -n pkg/.Act", &mut state),
            "Starting: Intent { cmp=pkg/.Act }\n"
        );
        assert_eq!(output("shell:input text 'a b;c'%sd", &mut state), "");
        assert_eq!(output("shell:input keyevent 66", &mut state), "");
        assert_eq!(state.texts, ["a b;c d"]);
        assert_eq!(state.keyevents, ["66"]);
        assert_eq!(state.activities, ["pkg/.Act"]);
        assert!(
            output("exec:uiautomator dump /dev/tty", &mut state)
                .ends_with("</hierarchy>UI hierchary dumped to: /dev/tty\n")
        );
        assert!(output("shell:reboot", &mut state).contains("inaccessible or not found"));
        assert_eq!(
            output(
                "shell:am start -a android.intent.action.VIEW -d 'https://example.com/a?b=1' -p org.example",
                &mut state
            ),
            "Starting: Intent { act=android.intent.action.VIEW dat=https://example.com/a?b=1 pkg=org.example }\n"
        );
        assert!(output("shell:am start -d x", &mut state).starts_with("Error: "));
        assert_eq!(
            output("shell:cat /proc/sys/kernel/random/boot_id", &mut state).trim(),
            state.boot_id
        );
        assert_eq!(
            output("shell:setprop lomi.fixture.busy_dumps 1", &mut state),
            ""
        );
        assert_eq!(
            output("exec:uiautomator dump /dev/tty", &mut state),
            "ERROR: could not get idle state.\n"
        );
        assert!(output("exec:uiautomator dump /dev/tty", &mut state).contains("<hierarchy"));
        let swipe = run("exec:input swipe 1 2 3 4 250", &mut state).expect("a known service");
        assert_eq!(swipe.duration, Duration::from_millis(250));
        assert!(run("sync:", &mut state).is_none());
        assert!(matches!(open("sync:", &mut state), Some(Opened::Sync)));
        assert!(run("framebuffer:", &mut state).is_none());
    }
}

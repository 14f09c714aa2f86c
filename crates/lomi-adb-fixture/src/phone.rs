//! What the fixture keeps beyond its screen: files (sync), installed packages (`pm`), running
//! app processes (`am`, `pidof`), a log (`logcat`) fed from its own events, and the rotation
//! settings (`settings get/put system user_rotation`).
//! An APK's package and version come from its manifest, read as a phone reads it (`apk.rs`).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::screen::FixtureState;

/// Where a shell user may write on a phone without root.
const WRITABLE: [&str; 2] = ["/data/local/tmp/", "/sdcard/"];
/// Packages every boot has; `pm list packages -3` leaves them out.
const SYSTEM_PACKAGES: [&str; 2] = ["android", "com.android.settings"];
const SYSTEM_PID: u32 = 1000;

/// An installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub version_code: u64,
    pub version_name: String,
    pub system: bool,
}

/// One line of the device log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub seconds: u64,
    pub micros: u32,
    pub pid: u32,
    /// V, D, I, W, E or F.
    pub level: char,
    pub tag: String,
    pub message: String,
}

impl LogLine {
    fn time(&self) -> (u64, u32) {
        (self.seconds, self.micros)
    }
}

fn now() -> (u64, u32) {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (elapsed.as_secs(), elapsed.subsec_micros())
}

impl FixtureState {
    /// The packages a fresh boot has.
    pub(crate) fn boot(&mut self) {
        for name in SYSTEM_PACKAGES {
            self.packages.insert(
                name.to_owned(),
                Package {
                    version_code: 34,
                    version_name: "14".to_owned(),
                    system: true,
                },
            );
        }
        self.next_pid = 2000;
        self.log(SYSTEM_PID, 'I', "lomi-fixture", "boot completed");
    }

    pub(crate) fn log(&mut self, pid: u32, level: char, tag: &str, message: &str) {
        let (seconds, micros) = now();
        self.log.push(LogLine {
            seconds,
            micros,
            pid,
            level,
            tag: tag.to_owned(),
            message: message.to_owned(),
        });
    }

    pub(crate) fn is_directory(&self, path: &str) -> bool {
        let with_slash = format!("{}/", path.trim_end_matches('/'));
        ["/", "/data/", "/data/local/", "/sdcard/"].contains(&with_slash.as_str())
            || WRITABLE.contains(&with_slash.as_str())
            || self.files.keys().any(|file| file.starts_with(&with_slash))
    }

    pub(crate) fn write_file(&mut self, path: &str, bytes: Vec<u8>) -> Result<(), String> {
        if path.contains("/../") || !WRITABLE.iter().any(|dir| path.starts_with(dir)) {
            return Err(format!("couldn't create file: {path}: Permission denied"));
        }
        if self.is_directory(path) {
            return Err(format!("couldn't create file: {path}: Is a directory"));
        }
        self.files.insert(path.to_owned(), bytes);
        Ok(())
    }

    /// `pm install [-r] [-d] [-g] PATH`, or a streamed `cmd package install -S SIZE`: what
    /// `pm` prints.
    pub(crate) fn install(&mut self, apk: &[u8], replace: bool) -> String {
        let manifest = match crate::apk::package_info(apk) {
            Ok(info) => (info.name, info.version_code, info.version_name),
            Err(why) => return format!("Failure [INSTALL_PARSE_FAILED_NOT_APK: {why}]\n"),
        };
        if let Some(installed) = self.packages.get(&manifest.0) {
            if !replace {
                return format!(
                    "Failure [INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install {} without first uninstalling.]\n",
                    manifest.0
                );
            }
            if installed.system {
                return "Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE]\n".to_owned();
            }
        }
        let (name, version_code, version_name) = manifest;
        self.log(
            SYSTEM_PID,
            'I',
            "PackageManager",
            &format!("Installed {name} versionCode={version_code}"),
        );
        self.packages.insert(
            name,
            Package {
                version_code,
                version_name,
                system: false,
            },
        );
        "Success\n".to_owned()
    }

    pub(crate) fn uninstall(&mut self, name: &str) -> String {
        match self.packages.get(name) {
            Some(package) if !package.system => {
                self.packages.remove(name);
                self.processes.remove(name);
                self.log(
                    SYSTEM_PID,
                    'I',
                    "PackageManager",
                    &format!("Removed {name}"),
                );
                "Success\n".to_owned()
            }
            _ => "Failure [DELETE_FAILED_INTERNAL_ERROR]\n".to_owned(),
        }
    }

    /// `am start` of an installed package's activity starts its process, which logs its start.
    pub(crate) fn started(&mut self, intent: &str, package: Option<&str>, activity: &str) {
        self.log(
            SYSTEM_PID,
            'I',
            "ActivityTaskManager",
            &format!("START u0 {{{intent}}} from uid 2000"),
        );
        let Some(package) = package.filter(|package| self.packages.contains_key(*package)) else {
            return;
        };
        let pid = match self.processes.get(package) {
            Some(pid) => *pid,
            None => {
                self.next_pid += 1;
                let pid = self.next_pid;
                self.processes.insert(package.to_owned(), pid);
                self.log(
                    SYSTEM_PID,
                    'I',
                    "ActivityManager",
                    &format!(
                        "Start proc {pid}:{package}/u0a100 for activity {{{package}/{activity}}}"
                    ),
                );
                pid
            }
        };
        self.log(
            pid,
            'I',
            "LomiFixtureApp",
            &format!("{package} started {activity}"),
        );
    }

    pub(crate) fn force_stop(&mut self, package: &str) {
        if let Some(pid) = self.processes.remove(package) {
            self.log(
                SYSTEM_PID,
                'I',
                "ActivityManager",
                &format!("Force stopping {package} appid=10100 user=0: from pid 2000"),
            );
            self.log(
                SYSTEM_PID,
                'I',
                "ActivityManager",
                &format!("Killing {pid}:{package}/u0a100 (adj 0): stop {package}"),
            );
        }
    }

    /// `logcat -d [-v …] [-T TIME] [--pid=PID] [FILTERSPEC …]`: the lines, formatted as
    /// threadtime with `-v epoch` and `-v usec` when asked (else `MM-DD` dates are left out for
    /// a plain `seconds.millis` time).
    pub(crate) fn logcat(&self, options: &[&str]) -> Result<String, String> {
        let (mut epoch, mut usec, mut since, mut pid) = (false, false, None, None);
        let mut specs: Vec<(String, char)> = Vec::new();
        let mut words = options.iter();
        while let Some(word) = words.next() {
            match *word {
                "-d" => {}
                "-v" => match words.next().copied() {
                    Some("epoch") => epoch = true,
                    Some("usec") => usec = true,
                    Some("threadtime" | "brief" | "time") => {}
                    other => return Err(format!("unsupported -v {other:?}")),
                },
                "-T" | "-t" => {
                    let value = words.next().ok_or("-T needs a time")?;
                    since = Some(parse_time(value).ok_or_else(|| format!("bad time {value}"))?);
                }
                "-b" => {
                    words.next();
                }
                "--pid" => {
                    pid = Some(
                        words
                            .next()
                            .and_then(|p| p.parse::<u32>().ok())
                            .ok_or("bad --pid")?,
                    )
                }
                other if other.starts_with("--pid=") => {
                    pid = Some(other["--pid=".len()..].parse().map_err(|_| "bad --pid")?);
                }
                other if other.starts_with('-') => {
                    return Err(format!("unsupported option {other}"));
                }
                spec => {
                    let (tag, level) = spec
                        .rsplit_once(':')
                        .ok_or_else(|| format!("bad filterspec {spec}"))?;
                    let level = level
                        .chars()
                        .next()
                        .filter(|c| "VDIWEFS".contains(*c))
                        .ok_or("bad level")?;
                    specs.push((tag.to_owned(), level));
                }
            }
        }
        let mut text = "--------- beginning of main\n".to_owned();
        for line in &self.log {
            if since.is_some_and(|since| line.time() < since)
                || pid.is_some_and(|pid| pid != line.pid)
            {
                continue;
            }
            if !specs.is_empty() {
                let spec = specs
                    .iter()
                    .find(|(tag, _)| tag == &line.tag)
                    .or_else(|| specs.iter().find(|(tag, _)| tag == "*"));
                let shown = spec
                    .is_some_and(|(_, level)| *level != 'S' && rank(line.level) >= rank(*level));
                if !shown {
                    continue;
                }
            }
            let time = match (epoch, usec) {
                (true, true) => format!("{:>10}.{:06}", line.seconds, line.micros),
                _ => format!("{:>10}.{:03}", line.seconds, line.micros / 1000),
            };
            text.push_str(&format!(
                "{time} {:>5} {:>5} {} {:<8}: {}\n",
                line.pid, line.pid, line.level, line.tag, line.message
            ));
        }
        Ok(text)
    }
}

fn rank(level: char) -> usize {
    "VDIWEF".find(level).unwrap_or(0)
}

/// `SECONDS.FRACTION` (logcat's `sssss.mmm…` form).
fn parse_time(value: &str) -> Option<(u64, u32)> {
    let (seconds, fraction) = value.split_once('.').unwrap_or((value, "0"));
    let seconds = seconds.parse().ok()?;
    let digits: String = fraction
        .chars()
        .chain(std::iter::repeat('0'))
        .take(6)
        .collect();
    Some((seconds, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apk(manifest: &str) -> Vec<u8> {
        crate::apk::tests::stored_zip("AndroidManifest.xml", manifest.as_bytes())
    }

    #[test]
    fn install_list_start_stop_uninstall_and_the_log() {
        let mut state = FixtureState::default();
        state.boot();
        let apk = apk(
            r#"<manifest xmlns:android="x" package="org.lomi.demo" android:versionCode="7" android:versionName="1.7"/>"#,
        );
        assert_eq!(state.install(&apk, false), "Success\n");
        assert!(
            state
                .install(&apk, false)
                .starts_with("Failure [INSTALL_FAILED_ALREADY_EXISTS")
        );
        assert_eq!(state.install(&apk, true), "Success\n");
        assert_eq!(state.packages["org.lomi.demo"].version_code, 7);
        assert!(
            state
                .install(b"PK\x03\x04", false)
                .starts_with("Failure [INSTALL_PARSE_FAILED_NOT_APK")
        );
        state.started("cmp=org.lomi.demo/.Main", Some("org.lomi.demo"), ".Main");
        let pid = state.processes["org.lomi.demo"];
        let log = state
            .logcat(&[
                "-d",
                "-v",
                "threadtime",
                "-v",
                "epoch",
                "-v",
                "usec",
                &format!("--pid={pid}"),
            ])
            .unwrap_or_default();
        assert!(
            log.contains("LomiFixtureApp: org.lomi.demo started .Main"),
            "{log}"
        );
        assert_eq!(log.lines().count(), 2, "{log}");
        let tagged = state
            .logcat(&["-d", "PackageManager:I", "*:S"])
            .unwrap_or_default();
        assert!(
            tagged.contains("Installed org.lomi.demo") && !tagged.contains("START"),
            "{tagged}"
        );
        let later = state
            .logcat(&["-d", "-T", "99999999999.0"])
            .unwrap_or_default();
        assert_eq!(later, "--------- beginning of main\n");
        state.force_stop("org.lomi.demo");
        assert!(state.processes.is_empty());
        assert_eq!(state.uninstall("org.lomi.demo"), "Success\n");
        assert_eq!(
            state.uninstall("org.lomi.demo"),
            "Failure [DELETE_FAILED_INTERNAL_ERROR]\n"
        );
        assert_eq!(
            state.uninstall("android"),
            "Failure [DELETE_FAILED_INTERNAL_ERROR]\n"
        );
    }
}

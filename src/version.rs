//! Version policy: published versions are immutable, so a changed contract needs a new
//! `serverInfo.version`, a breaking change needs a major bump (a minor one for 0.x), and a
//! version never goes backwards.
//!
//! Versions are compared as semver (`1.10.0` > `1.9.0`, a leading `v` allowed). Versions that
//! are not semver (`2024.11`, `build-7`) are never compared as strings: only by the order the
//! lockfile saw them in (`previous-versions`). Strings that look like ranges (`^1.2.3`, `1.x`)
//! are not versions at all.

use std::cmp::Ordering;

/// A `serverInfo.version`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    Semver(semver::Version),
    /// Not semver and not a range: ordered only by when it was locked.
    Opaque(String),
    /// Looks like a range or wildcard, which no server can be.
    Range(String),
}

impl Version {
    pub fn parse(text: &str) -> Version {
        let trimmed = text.trim();
        if looks_like_range(trimmed) {
            return Version::Range(text.to_string());
        }
        let bare = trimmed
            .strip_prefix('v')
            .or_else(|| trimmed.strip_prefix('V'))
            .unwrap_or(trimmed);
        if let Ok(v) = semver::Version::parse(bare) {
            return Version::Semver(v);
        }
        // `1.9` and `2` are semver with the missing parts zero (as npm and cargo read them).
        let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let parts: Vec<&str> = bare.split('.').collect();
        if parts.len() < 3
            && parts.iter().all(|p| numeric(p))
            && let Ok(v) = semver::Version::parse(&format!(
                "{}.{}.{}",
                parts[0],
                parts.get(1).unwrap_or(&"0"),
                "0"
            ))
        {
            return Version::Semver(v);
        }
        Version::Opaque(text.to_string())
    }
}

/// Whether `text` reads as a version requirement rather than one version.
pub fn looks_like_range(text: &str) -> bool {
    // Tags and nothing at all name no particular version either.
    if text.is_empty() || matches!(text.to_ascii_lowercase().as_str(), "latest" | "next" | "x") {
        return true;
    }
    if text.starts_with(['^', '~', '>', '<', '=', '*']) {
        return true;
    }
    if text.contains("||") || text.contains(" - ") || text.contains(',') || text.contains(' ') {
        return true;
    }
    // `1.x`, `1.2.*`, `1.X.0`: a wildcard component.
    let core = text.split(['-', '+']).next().unwrap_or(text);
    let core = core.strip_prefix('v').unwrap_or(core);
    core.split('.')
        .skip(1)
        .chain(core.split('.').take(1).filter(|c| *c == "*"))
        .any(|c| matches!(c, "x" | "X" | "*"))
}

/// What the version policy needs to know about one server's change.
#[derive(Debug, Clone, Copy)]
pub struct VersionChange<'a> {
    /// `serverInfo.version` before and after (absent when the server sent none).
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
    /// Whether the contract digest changed.
    pub contract_changed: bool,
    /// Whether any change is breaking.
    pub breaking: bool,
    /// Versions the entry had before `before`, oldest first (for versions that are not semver).
    pub history: &'a [String],
}

/// The version codes this change earns, each with its detail line.
pub fn version_findings(change: &VersionChange<'_>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let Some(after) = change.after else {
        return out;
    };
    let new = Version::parse(after);
    if let Version::Range(text) = &new {
        // Unchanged legacy state is not re-litigated: only a version this change introduces.
        if change.before != Some(after) {
            out.push((
                "version-invalid",
                format!("serverInfo.version {text:?} is a range, not a version"),
            ));
        }
        return out;
    }
    let Some(before) = change.before else {
        return out;
    };
    if before == after {
        if change.contract_changed {
            out.push((
                "version-not-bumped",
                format!("the contract changed but serverInfo.version is still {after:?}"),
            ));
        }
        return out;
    }
    match (Version::parse(before), new) {
        (Version::Semver(old), Version::Semver(new)) => match new.cmp_precedence(&old) {
            Ordering::Less => out.push((
                "version-backwards",
                format!("serverInfo.version went backwards: {before} -> {after}"),
            )),
            Ordering::Equal => {
                // Equal precedence, different text (build metadata, a `v`): not a new version.
                if change.contract_changed {
                    out.push((
                        "version-not-bumped",
                        format!("{before} -> {after} is the same version under semver"),
                    ));
                }
            }
            Ordering::Greater => {
                if change.breaking && !major_bump(&old, &new) {
                    let needed = if old.major == 0 {
                        format!("0.{}.0", old.minor + 1)
                    } else {
                        format!("{}.0.0", old.major + 1)
                    };
                    out.push((
                        "semver-violation",
                        format!(
                            "breaking change released as {before} -> {after}; semver needs at least {needed}"
                        ),
                    ));
                }
            }
        },
        _ => {
            // Not semver on one side: order by when each version was first locked.
            let seen_at = |v: &str| change.history.iter().position(|h| h == v);
            if let (Some(new_at), old_at) = (seen_at(after), seen_at(before))
                && old_at.is_none_or(|old_at| new_at < old_at)
            {
                out.push((
                    "version-backwards",
                    format!("serverInfo.version went back to {after:?}, locked before {before:?}"),
                ));
            }
        }
    }
    out
}

/// A bump that may carry breaking changes: a new major, or a new minor while at 0.x. From a
/// pre-release, its own release line may still break (`2.0.0-rc.1` -> `2.0.0-rc.2` or
/// `2.0.0`).
fn major_bump(old: &semver::Version, new: &semver::Version) -> bool {
    if new.major != old.major {
        return new.major > old.major;
    }
    if !old.pre.is_empty() && (old.major > 0 || new.minor == old.minor) {
        return true;
    }
    old.major == 0 && new.minor > old.minor
}

/// `previous-versions` after relocking: the old version appended when the version changes.
pub fn next_history(history: &[String], before: Option<&str>, after: Option<&str>) -> Vec<String> {
    let mut next = history.to_vec();
    if let (Some(before), Some(after)) = (before, after)
        && before != after
        && !next.iter().any(|v| v == before)
    {
        next.push(before.to_string());
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(
        before: Option<&str>,
        after: Option<&str>,
        changed: bool,
        breaking: bool,
    ) -> Vec<&'static str> {
        version_findings(&VersionChange {
            before,
            after,
            contract_changed: changed,
            breaking,
            history: &[],
        })
        .into_iter()
        .map(|(c, _)| c)
        .collect()
    }

    #[test]
    fn ranges_are_not_versions() {
        for range in [
            "^1.2.3",
            "~1.2.3",
            "1.x",
            "1.2.*",
            "*",
            ">=1.0.0",
            "1.2.3 - 1.4",
            "1 || 2",
            "v1.X",
        ] {
            assert!(looks_like_range(range), "{range}");
            assert_eq!(Version::parse(range), Version::Range(range.to_string()));
        }
        for version in [
            "1.2.3",
            "v1.2.3",
            "1.2.3-rc.1",
            "1.2.3+build.5",
            "2024.11",
            "0.0.1-x.7",
            "build-9",
        ] {
            assert!(!looks_like_range(version), "{version}");
        }
        assert!(matches!(Version::parse("v1.2.3"), Version::Semver(_)));
        assert!(matches!(Version::parse("2024.11"), Version::Semver(_)));
        assert!(matches!(Version::parse("2024.11.5.1"), Version::Opaque(_)));
        assert!(matches!(Version::parse("build-7"), Version::Opaque(_)));
    }

    #[test]
    fn policy_table() {
        type Row = (
            Option<&'static str>,
            Option<&'static str>,
            bool,
            bool,
            &'static [&'static str],
        );
        let table: &[Row] = &[
            // before, after, contract changed, breaking, codes
            (Some("1.2.3"), Some("1.2.3"), false, false, &[]),
            (
                Some("1.2.3"),
                Some("1.2.3"),
                true,
                false,
                &["version-not-bumped"],
            ),
            (
                Some("1.2.3"),
                Some("1.2.3"),
                true,
                true,
                &["version-not-bumped"],
            ),
            (Some("1.2.3"), Some("1.2.4"), true, false, &[]),
            (
                Some("1.2.3"),
                Some("1.3.0"),
                true,
                true,
                &["semver-violation"],
            ),
            (Some("1.2.3"), Some("2.0.0"), true, true, &[]),
            (Some("1.2.3"), Some("2.0.0-rc.1"), true, true, &[]),
            (
                Some("0.3.1"),
                Some("0.3.2"),
                true,
                true,
                &["semver-violation"],
            ),
            (Some("0.3.1"), Some("0.4.0"), true, true, &[]),
            (Some("1.9.0"), Some("1.10.0"), true, false, &[]),
            (
                Some("1.10.0"),
                Some("1.9.0"),
                true,
                false,
                &["version-backwards"],
            ),
            (
                Some("2.0.0"),
                Some("2.0.0-rc.1"),
                false,
                false,
                &["version-backwards"],
            ),
            (
                Some("1.2.3"),
                Some("v1.2.3"),
                true,
                false,
                &["version-not-bumped"],
            ),
            (Some("1.2.3"), Some("1.2.3+b2"), false, false, &[]),
            (
                Some("1.2.3"),
                Some("^1.2.3"),
                false,
                false,
                &["version-invalid"],
            ),
            (Some("^1.2.3"), Some("^1.2.3"), true, false, &[]),
            (None, Some("1.x"), false, false, &["version-invalid"]),
            (None, Some("1.0.0"), true, true, &[]),
            (Some("1.0.0"), None, true, true, &[]),
            (
                Some("2024.10"),
                Some("2024.9"),
                true,
                true,
                &["version-backwards"],
            ),
            (Some("1.9"), Some("1.10"), true, false, &[]),
            (Some("2"), Some("1"), false, false, &["version-backwards"]),
            (Some("1.0.0-rc.1"), Some("1.0.0"), true, true, &[]),
            (Some("2.0.0-rc.1"), Some("2.0.0-rc.2"), true, true, &[]),
            (Some("2.0.0-rc.1"), Some("2.1.0"), true, true, &[]),
            (Some("1.4.0-beta"), Some("1.5.0"), true, true, &[]),
            (
                Some("1.4.0"),
                Some("1.5.0-beta"),
                true,
                true,
                &["semver-violation"],
            ),
            (
                Some("1.0.0"),
                Some("latest"),
                false,
                false,
                &["version-invalid"],
            ),
            (Some("1.0.0"), Some(""), false, false, &["version-invalid"]),
            (Some("1.2.3.4"), Some("1.2.3.5"), true, true, &[]),
        ];
        for (before, after, changed, breaking, want) in table {
            assert_eq!(
                codes(*before, *after, *changed, *breaking),
                want.to_vec(),
                "{before:?} -> {after:?} changed={changed} breaking={breaking}"
            );
        }
    }

    #[test]
    fn opaque_versions_follow_lock_order() {
        let history = vec!["build-1".to_string(), "build-2".to_string()];
        let run = |before, after| {
            version_findings(&VersionChange {
                before: Some(before),
                after: Some(after),
                contract_changed: true,
                breaking: false,
                history: &history,
            })
            .into_iter()
            .map(|(c, _)| c)
            .collect::<Vec<_>>()
        };
        // build-10 sorts before build-2 as a string, but was never seen: it is newer.
        assert!(run("build-3", "build-10").is_empty());
        assert_eq!(run("build-3", "build-2"), ["version-backwards"]);
        assert_eq!(run("build-2", "build-1"), ["version-backwards"]);
        assert!(run("build-1", "build-3").is_empty());
        assert_eq!(
            next_history(&history, Some("build-3"), Some("build-4")),
            ["build-1", "build-2", "build-3"]
        );
        assert_eq!(
            next_history(&history, Some("build-2"), Some("build-2")),
            history
        );
    }
}

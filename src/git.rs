//! Reading a committed file at a git revision, and the user's git identity.
//!
//! `--base REV` compares the working lockfile with the one committed at `REV`, usually a pull
//! request's base. CI checks out shallowly (`fetch-depth: 1`) and then fetches the base commit
//! alone, so everything here must work in a shallow clone, and when an object is missing the
//! error names the one `git fetch` that brings it in. libgit2 (vendored, no network) reads the
//! repository: catalock never runs the `git` binary.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use git2::{Config, ConfigLevel, ErrorCode, ObjectType, Oid, Repository};

use crate::error::{Error, io_reason};

const OUTSIDE_GIT_HINT: &str = "use --baseline FILE to compare with a lockfile outside git";

/// The content of `path` (a path as the user gave it, relative to the current directory or
/// absolute) as committed at revision `rev` (anything `git rev-parse` accepts: a branch,
/// `origin/main`, a tag, a full or abbreviated SHA, `HEAD~1`, `FETCH_HEAD`), in the repository
/// that contains `path`'s directory (discovered upward from it, like git does).
///
/// `Ok(None)` when the file does not exist at that revision (a lockfile added by this pull
/// request). The file need not exist in the work tree, nor even its directory.
pub fn read_at_revision(path: &Path, rev: &str) -> Result<Option<String>, Error> {
    let (dir, rest) = locate(path)?;
    let repo = open_repository(path, &dir, rev)?;
    let components = repo_relative(&repo, path, &dir, rest)?;
    let lookup = Lookup {
        repo: &repo,
        rev,
        shown: path.display().to_string(),
        relative: components
            .iter()
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    };
    lookup.read(&components)
}

/// `path` relative to the root of the git work tree that contains it, with `/` separators
/// (`services/weather/mcp.lock`): what GitHub annotations and code scanning need. `None`
/// outside a repository (or when it cannot be opened).
pub fn path_in_repository(path: &Path) -> Option<String> {
    let (dir, rest) = locate(path).ok()?;
    let repo = Repository::discover(&dir).ok()?;
    let components = repo_relative(&repo, path, &dir, rest).ok()?;
    Some(
        components
            .iter()
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// The user's git identity, `"Name <email>"` (or just `"Name"` without an email), as git would
/// record it as the author: `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL` first, then `author.*` and
/// `user.*` from the repository discovered from `start` falling back to the global and system
/// config, then `EMAIL` for the address. `None` when no name is configured.
pub fn identity(start: &Path) -> Option<String> {
    identity_with(start, &|key| std::env::var(key).ok())
}

/// [`identity`] with the environment passed in, so tests need not mutate the process's.
fn identity_with(start: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let env = |key: &str| {
        env(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let config = user_config(start, &env);
    let get = |key: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let name = env("GIT_AUTHOR_NAME")
        .or_else(|| get("author.name"))
        .or_else(|| get("user.name"))?;
    let email = env("GIT_AUTHOR_EMAIL")
        .or_else(|| get("author.email"))
        .or_else(|| get("user.email"))
        .or_else(|| env("EMAIL"));
    Some(match email {
        Some(email) => format!("{name} <{email}>"),
        None => name,
    })
}

/// The config git would read from `start`. libgit2's own stack (`Repository::config`) handles
/// `includeIf.gitdir` but ignores `GIT_CONFIG_GLOBAL`/`GIT_CONFIG_SYSTEM`/`GIT_CONFIG_NOSYSTEM`
/// (it reads them only for repositories opened from the environment), so when one of those is
/// set the stack is assembled here instead.
fn user_config(start: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<Config> {
    let repo = Repository::discover(start).ok();
    let overridden = [
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
    ]
    .iter()
    .any(|key| env(key).is_some());
    if !overridden {
        return match &repo {
            Some(repo) => repo.config().ok(),
            None => Config::open_default().ok(),
        };
    }
    let mut config = Config::new().ok()?;
    let mut add = |path: PathBuf, level: ConfigLevel| {
        // `/dev/null` (the usual "no global config") and absent files add nothing.
        if path.is_file() {
            let _ = config.add_file(&path, level, false);
        }
    };
    let no_system =
        env("GIT_CONFIG_NOSYSTEM").is_some_and(|v| Config::parse_bool(v).unwrap_or(false));
    if !no_system {
        match env("GIT_CONFIG_SYSTEM") {
            Some(path) => add(path.into(), ConfigLevel::System),
            None => {
                if let Ok(path) = Config::find_system() {
                    add(path, ConfigLevel::System);
                }
            }
        }
    }
    // Like git, GIT_CONFIG_GLOBAL replaces both ~/.gitconfig and the XDG file.
    match env("GIT_CONFIG_GLOBAL") {
        Some(path) => add(path.into(), ConfigLevel::Global),
        None => {
            if let Ok(path) = Config::find_xdg() {
                add(path, ConfigLevel::XDG);
            }
            if let Ok(path) = Config::find_global() {
                add(path, ConfigLevel::Global);
            }
        }
    }
    if let Some(repo) = &repo {
        add(repo.commondir().join("config"), ConfigLevel::Local);
        add(repo.path().join("config.worktree"), ConfigLevel::Worktree);
    }
    Some(config)
}

/// Splits `path` into its nearest existing (canonical) directory and the components below it,
/// ending with the file name. Canonicalizing matters because the repository's work tree comes
/// back canonical (`/private/var/...` on macOS); walking up lets a file whose directory was
/// deleted from the work tree still be read from history.
fn locate(path: &Path) -> Result<(PathBuf, Vec<OsString>), Error> {
    let Some(file_name) = path.file_name() else {
        return Err(Error::usage(
            format!("{} is not a file path", path.display()),
            "pass the lockfile's path, e.g. mcp.lock",
        ));
    };
    let absolute = std::path::absolute(path).map_err(|err| {
        Error::input(
            format!("cannot resolve {}: {}", path.display(), io_reason(&err)),
            "pwd",
        )
    })?;
    let parent = absolute.parent().unwrap_or(Path::new("/"));
    let components: Vec<Component<'_>> = parent.components().collect();
    for keep in (1..=components.len()).rev() {
        let candidate: PathBuf = components[..keep].iter().collect();
        match std::fs::canonicalize(&candidate) {
            Ok(mut base) => {
                let mut rest: Vec<OsString> = Vec::new();
                for component in &components[keep..] {
                    match component {
                        Component::Normal(name) => rest.push(name.to_os_string()),
                        Component::ParentDir => {
                            // `..` first undoes a missing directory, then climbs out of `base`.
                            let undone = rest.pop().is_some();
                            if !undone {
                                base.pop();
                            }
                        }
                        _ => {}
                    }
                }
                rest.push(file_name.to_os_string());
                return Ok((base, rest));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                return Err(Error::input(
                    format!("cannot read {}: {}", candidate.display(), io_reason(&err)),
                    format!("ls -ld {}", quote(&candidate.to_string_lossy())),
                ));
            }
        }
    }
    Err(Error::input(
        format!(
            "cannot resolve {}: no directory of it exists",
            path.display()
        ),
        "pwd",
    ))
}

/// The repository containing `dir`, searched upward like git does.
fn open_repository(path: &Path, dir: &Path, rev: &str) -> Result<Repository, Error> {
    let shown_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.display().to_string(),
        _ => dir.display().to_string(),
    };
    let err = match Repository::discover(dir) {
        Ok(repo) => return Ok(repo),
        Err(err) => err,
    };
    let message = err.message();
    if err.code() == ErrorCode::NotFound {
        return Err(Error::usage(
            format!("--base needs a git repository: {shown_dir} is not inside one"),
            OUTSIDE_GIT_HINT,
        ));
    }
    if err.code() == ErrorCode::Owner {
        // libgit2 says "repository path '<workdir>/' is not owned by current user".
        let owned = message
            .split_once('\'')
            .and_then(|(_, rest)| rest.split_once('\''))
            .map(|(path, _)| path.trim_end_matches('/').to_string())
            .unwrap_or_else(|| dir.display().to_string());
        return Err(Error::usage(
            format!("git refuses the repository at {owned}: it is owned by another user"),
            format!("git config --global --add safe.directory {}", quote(&owned)),
        ));
    }
    if let Some(extension) = message.strip_prefix("unsupported extension name extensions.") {
        // Partial clones (`--filter=blob:none`) and reftable repositories set extensions
        // libgit2 refuses to open; git itself can still extract the file.
        let what = match extension {
            "partialclone" => "partial clones".to_string(),
            other => format!("repositories using extensions.{other}"),
        };
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        return Err(Error::usage(
            format!(
                "cannot read the git repository containing {shown_dir}: catalock does not support {what}"
            ),
            format!(
                "git -C {} show {} > base.lock, then use --baseline base.lock",
                quote(&shown_dir),
                quote(&format!("{rev}:./{file}")),
            ),
        ));
    }
    Err(Error::input(
        format!("cannot open the git repository containing {shown_dir}: {message}"),
        format!("git -C {} status", quote(&shown_dir)),
    ))
}

/// The components of the file's path inside the repository's work tree.
fn repo_relative(
    repo: &Repository,
    path: &Path,
    dir: &Path,
    rest: Vec<OsString>,
) -> Result<Vec<OsString>, Error> {
    let Some(workdir) = repo.workdir() else {
        return Err(Error::usage(
            format!(
                "--base needs a work tree: {} is inside the bare repository {}",
                path.display(),
                repo.path().display()
            ),
            OUTSIDE_GIT_HINT,
        ));
    };
    let workdir = std::fs::canonicalize(workdir).map_err(|err| {
        Error::input(
            format!("cannot read {}: {}", workdir.display(), io_reason(&err)),
            format!("ls -ld {}", quote(&workdir.to_string_lossy())),
        )
    })?;
    let Ok(inside) = dir.strip_prefix(&workdir) else {
        return Err(Error::usage(
            format!(
                "{} is outside the work tree {} of its git repository",
                path.display(),
                workdir.display()
            ),
            OUTSIDE_GIT_HINT,
        ));
    };
    let mut components: Vec<OsString> = inside
        .components()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    components.extend(rest);
    Ok(components)
}

/// One file looked up at one revision, with what its errors need to say.
struct Lookup<'a> {
    repo: &'a Repository,
    rev: &'a str,
    /// The path as the user gave it, for messages.
    shown: String,
    /// The path from the work tree's root with `/` separators, for `git show REV:PATH` hints.
    relative: String,
}

impl Lookup<'_> {
    fn read(&self, components: &[OsString]) -> Result<Option<String>, Error> {
        let commit = self.resolve()?;
        let commit_id = Some(commit.id());
        let mut tree = commit.tree().map_err(|err| {
            self.object_error(err, &format!("tree of \"{}\"", self.rev), commit_id)
        })?;
        let Some((file, dirs)) = components.split_last() else {
            return Ok(None);
        };
        for dir in dirs {
            let id = match tree.get_name_bytes(dir.as_encoded_bytes()) {
                Some(entry) if entry.kind() == Some(ObjectType::Tree) => entry.id(),
                // Absent, or a file or submodule where the path needs a directory.
                _ => return Ok(None),
            };
            tree = self.repo.find_tree(id).map_err(|err| {
                self.object_error(err, &format!("tree of \"{}\"", self.rev), commit_id)
            })?;
        }
        let Some(entry) = tree.get_name_bytes(file.as_encoded_bytes()) else {
            return Ok(None);
        };
        let not_file = |what: &str| {
            Error::lockfile(
                format!("{} is {what} at \"{}\", not a file", self.shown, self.rev),
                format!("git ls-tree {} {}", quote(self.rev), quote(&self.relative)),
            )
        };
        match entry.kind() {
            Some(ObjectType::Blob) if entry.filemode() == 0o120000 => {
                return Err(not_file("a symbolic link"));
            }
            Some(ObjectType::Blob) => {}
            Some(ObjectType::Tree) => return Err(not_file("a directory")),
            _ => return Err(not_file("a submodule")),
        }
        let blob = self.repo.find_blob(entry.id()).map_err(|err| {
            let what = format!("content of {} at \"{}\"", self.shown, self.rev);
            self.object_error(err, &what, commit_id)
        })?;
        match std::str::from_utf8(blob.content()) {
            Ok(text) => Ok(Some(text.to_string())),
            Err(_) => Err(Error::lockfile(
                format!("{} at \"{}\" is not UTF-8 text", self.shown, self.rev),
                format!("git show {}", self.show_arg()),
            )),
        }
    }

    /// The commit `rev` names.
    fn resolve(&self) -> Result<git2::Commit<'_>, Error> {
        let object = match self.repo.revparse_single(self.rev) {
            Ok(object) => object,
            Err(err) => return Err(self.unresolved(err)),
        };
        let id = object.id();
        object.peel_to_commit().map_err(|err| {
            if err.code() == ErrorCode::NotFound {
                // A tag whose commit is missing.
                self.missing(&format!("commit of \"{}\"", self.rev), None, false)
            } else {
                Error::usage(
                    format!("revision \"{}\" ({id}) is not a commit", self.rev),
                    format!("git cat-file -t {}", quote(self.rev)),
                )
            }
        })
    }

    /// The error for a revision libgit2 could not resolve.
    fn unresolved(&self, err: git2::Error) -> Error {
        if err.code() == ErrorCode::Ambiguous {
            return Error::usage(
                format!("revision \"{}\" is ambiguous in this repository", self.rev),
                format!("git rev-parse --disambiguate={}", quote(self.rev)),
            );
        }
        // revparse also fails when a ref exists but its commit does not (a ref past a shallow
        // boundary, a pruned commit): that is a missing object, not an unknown name.
        let target = self
            .repo
            .resolve_reference_from_short_name(self.rev)
            .and_then(|reference| reference.resolve())
            .ok()
            .and_then(|reference| reference.target());
        if let Some(id) = target {
            let present = self.repo.odb().is_ok_and(|odb| odb.exists(id));
            if !present {
                return self.missing(&format!("commit of \"{}\"", self.rev), Some(id), false);
            }
        }
        if !matches!(err.code(), ErrorCode::NotFound | ErrorCode::InvalidSpec) {
            return Error::usage(
                format!(
                    "cannot resolve revision \"{}\": {}",
                    self.rev,
                    err.message()
                ),
                format!("git rev-parse {}", quote(self.rev)),
            );
        }
        let shallow = if self.repo.is_shallow() {
            " (this is a shallow clone)"
        } else {
            ""
        };
        Error::usage(
            format!(
                "revision \"{}\" is not in this repository{shallow}",
                self.rev
            ),
            self.fetch_hint(None),
        )
    }

    /// The error for an object libgit2 failed to read: missing, or something else.
    fn object_error(&self, err: git2::Error, what: &str, commit: Option<Oid>) -> Error {
        if err.code() == ErrorCode::NotFound {
            self.missing(what, commit, true)
        } else {
            Error::lockfile(
                format!("cannot read the {what}: {}", err.message()),
                format!("git show {}", self.show_arg()),
            )
        }
    }

    /// A revision that resolves to an object this repository lacks. `content` is true for a
    /// tree or blob of a commit that is present: what partial clones leave out.
    fn missing(&self, what: &str, commit: Option<Oid>, content: bool) -> Error {
        if content && self.is_partial() {
            // git fetches a promised object on first use; `cat-file -e` does so silently.
            return Error::usage(
                format!("the {what} is not in this partial clone"),
                format!("git cat-file -e {}", self.show_arg()),
            );
        }
        let message = if self.repo.is_shallow() {
            format!("the {what} is not in this shallow clone")
        } else {
            format!("the {what} is missing from this repository")
        };
        Error::usage(message, self.fetch_hint(commit))
    }

    /// Whether objects may be missing by design (`git clone --filter=...`). Current git marks
    /// the remote (`remote.origin.promisor`); older git set `extensions.partialClone`, which
    /// libgit2 refuses to open at all (see [`open_repository`]).
    fn is_partial(&self) -> bool {
        let Ok(config) = self.repo.config() else {
            return false;
        };
        let Ok(mut entries) = config.entries(Some(r"^remote\..*\.promisor$")) else {
            return false;
        };
        let mut partial = false;
        while let Some(Ok(entry)) = entries.next() {
            partial |= entry
                .value()
                .is_ok_and(|v| Config::parse_bool(v).unwrap_or(false));
        }
        partial
    }

    /// The one `git fetch` most likely to bring `rev` (or the commit it names) in.
    fn fetch_hint(&self, commit: Option<Oid>) -> String {
        let shallow = self.repo.is_shallow();
        let depth = if shallow { "--depth=1 " } else { "" };
        let rev = self.rev;
        if rev.contains(['~', '^', '@', ':']) && commit.is_none() {
            // `HEAD~1` and friends walk history: deepen it rather than fetch a name.
            return if shallow {
                "git fetch --deepen=50".to_string()
            } else {
                "git log --oneline -10".to_string()
            };
        }
        let remotes: Vec<String> = self
            .repo
            .remotes()
            .map(|names| {
                names
                    .iter()
                    .flatten()
                    .flatten()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let tracking = remotes
            .iter()
            .map(String::as_str)
            .chain(["origin"])
            .find_map(|remote| {
                let branch = rev
                    .strip_prefix(&format!("refs/remotes/{remote}/"))
                    .or_else(|| rev.strip_prefix(&format!("{remote}/")))?;
                Some((remote, branch))
            });
        if let Some((remote, branch)) = tracking {
            // An explicit destination: a single-branch clone (every `--depth` clone) fetches
            // other branches into FETCH_HEAD only, leaving `origin/<branch>` unresolved.
            let refspec = format!("{branch}:refs/remotes/{remote}/{branch}");
            return format!("git fetch {depth}{remote} {}", quote(&refspec));
        }
        // `origin` when it exists (or nothing does), else the only or first remote.
        let remote = match remotes.first() {
            Some(first) if !remotes.iter().any(|r| r == "origin") => first.as_str(),
            _ => "origin",
        };
        if let Some(id) = commit {
            return format!("git fetch {depth}{remote} {id}");
        }
        if rev == "FETCH_HEAD" {
            return format!("git fetch {depth}{remote}");
        }
        format!("git fetch {depth}{remote} {}", quote(rev))
    }

    /// `REV:PATH` for `git show`, quoted for the shell.
    fn show_arg(&self) -> String {
        quote(&format!("{}:{}", self.rev, self.relative))
    }
}

/// `text` as one shell word: bare when it is plainly safe, single-quoted otherwise.
fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:@+,=%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::process::Command;

    /// Runs git in `dir` isolated from the machine's config, returning trimmed stdout.
    fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.com",
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "tag.gpgsign=false",
            ])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_CEILING_DIRECTORIES")
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }

    /// Runs a `git ...` hint (plain words, no quoting) in `dir`.
    fn run_hint(dir: &Path, hint: &str) {
        let words: Vec<&str> = hint.split_whitespace().collect();
        assert_eq!(words[0], "git", "{hint}");
        git(dir, &words[1..]);
    }

    fn write(path: &Path, content: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn commit_all(dir: &Path, message: &str) -> String {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    /// A repository with three commits of `mcp.lock` ("one", "two", "three"), a nested
    /// `sub/dir/mcp.lock`, `old/mcp.lock` deleted in the second commit, `new.lock` added in the
    /// third, and a `release` branch at the second. Returns the commits' SHAs, oldest first.
    fn repo_with_history(dir: &Path) -> [String; 3] {
        git(dir, &["init", "-q"]);
        write(&dir.join("mcp.lock"), b"one\n");
        write(&dir.join("sub/dir/mcp.lock"), b"nested one\n");
        write(&dir.join("old/mcp.lock"), b"old\n");
        let first = commit_all(dir, "first");
        write(&dir.join("mcp.lock"), b"two\n");
        write(&dir.join("sub/dir/mcp.lock"), b"nested two\n");
        std::fs::remove_dir_all(dir.join("old")).unwrap();
        let second = commit_all(dir, "second");
        git(dir, &["branch", "release"]);
        write(&dir.join("mcp.lock"), b"three\n");
        write(&dir.join("new.lock"), b"new\n");
        let third = commit_all(dir, "third");
        [first, second, third]
    }

    fn read(path: &Path, rev: &str) -> Option<String> {
        read_at_revision(path, rev).unwrap_or_else(|err| panic!("{rev}: {err} ({})", err.hint))
    }

    fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(temp.path()).unwrap();
        (temp, path)
    }

    #[test]
    fn reads_head_parent_branch_tag_and_shas() {
        let (_temp, dir) = canonical_tempdir();
        let [first, second, _] = repo_with_history(&dir);
        git(&dir, &["tag", "-a", "-m", "v1", "v1", &first]);
        let lock = dir.join("mcp.lock");
        assert_eq!(read(&lock, "HEAD").as_deref(), Some("three\n"));
        assert_eq!(read(&lock, "HEAD~1").as_deref(), Some("two\n"));
        assert_eq!(read(&lock, "HEAD^^").as_deref(), Some("one\n"));
        assert_eq!(read(&lock, "release").as_deref(), Some("two\n"));
        assert_eq!(read(&lock, "v1").as_deref(), Some("one\n"));
        assert_eq!(read(&lock, &second).as_deref(), Some("two\n"));
        assert_eq!(read(&lock, &first[..7]).as_deref(), Some("one\n"));
    }

    #[test]
    fn absent_file_is_none() {
        let (_temp, dir) = canonical_tempdir();
        repo_with_history(&dir);
        assert_eq!(
            read(&dir.join("new.lock"), "HEAD").as_deref(),
            Some("new\n")
        );
        assert_eq!(read(&dir.join("new.lock"), "HEAD~1"), None);
        assert_eq!(read(&dir.join("never.lock"), "HEAD"), None);
        // A directory missing from the work tree, present only in history.
        assert_eq!(
            read(&dir.join("old/mcp.lock"), "HEAD~2").as_deref(),
            Some("old\n")
        );
        assert_eq!(read(&dir.join("old/mcp.lock"), "HEAD"), None);
        assert_eq!(read(&dir.join("gone/x/../mcp.lock"), "HEAD"), None);
        // A path through a file is absent, not an error.
        assert_eq!(read(&dir.join("mcp.lock/inner"), "HEAD"), None);
    }

    #[test]
    fn nested_and_relative_paths() {
        let (_temp, dir) = canonical_tempdir();
        repo_with_history(&dir);
        let nested = dir.join("sub/dir/mcp.lock");
        assert_eq!(read(&nested, "HEAD").as_deref(), Some("nested two\n"));
        assert_eq!(read(&nested, "HEAD~2").as_deref(), Some("nested one\n"));
        // Discovery starts at the file's directory, whatever the current directory is.
        assert_eq!(
            read(&dir.join("sub/dir/../../mcp.lock"), "HEAD").as_deref(),
            Some("three\n")
        );
        // A relative path, resolved against this process's current directory (not changed:
        // tests run in parallel), climbing to the root and down to the repository.
        let cwd = std::env::current_dir().unwrap();
        let ups = cwd
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count();
        let mut relative = PathBuf::new();
        for _ in 0..ups {
            relative.push("..");
        }
        relative.push(nested.strip_prefix("/").unwrap());
        assert!(relative.is_relative());
        assert_eq!(read(&relative, "HEAD").as_deref(), Some("nested two\n"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_directories() {
        let (_temp, dir) = canonical_tempdir();
        let repo = dir.join("repo");
        std::fs::create_dir(&repo).unwrap();
        repo_with_history(&repo);
        std::os::unix::fs::symlink(&repo, dir.join("link")).unwrap();
        let through_link = dir.join("link/sub/dir/mcp.lock");
        assert_eq!(
            read(&through_link, "HEAD~1").as_deref(),
            Some("nested two\n")
        );
        // The un-canonicalized temp dir (a symlink on macOS) works too.
        let (temp, _) = canonical_tempdir();
        git(temp.path(), &["init", "-q"]);
        write(&temp.path().join("mcp.lock"), b"x\n");
        commit_all(temp.path(), "x");
        assert_eq!(
            read(&temp.path().join("mcp.lock"), "HEAD").as_deref(),
            Some("x\n")
        );
    }

    #[test]
    fn not_a_repository() {
        let (_temp, dir) = canonical_tempdir();
        let err = read_at_revision(&dir.join("mcp.lock"), "main").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!(
                "--base needs a git repository: {} is not inside one",
                dir.display()
            )
        );
        assert_eq!(
            err.hint,
            "use --baseline FILE to compare with a lockfile outside git"
        );
    }

    #[test]
    fn unknown_revisions() {
        let (_temp, dir) = canonical_tempdir();
        repo_with_history(&dir);
        let lock = dir.join("mcp.lock");
        let err = read_at_revision(&lock, "no-such-branch").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            "revision \"no-such-branch\" is not in this repository"
        );
        assert_eq!(err.hint, "git fetch origin no-such-branch");
        let err = read_at_revision(&lock, "origin/feature").unwrap_err();
        assert_eq!(
            err.message,
            "revision \"origin/feature\" is not in this repository"
        );
        assert_eq!(
            err.hint,
            "git fetch origin feature:refs/remotes/origin/feature"
        );
        let err = read_at_revision(&lock, "HEAD~5").unwrap_err();
        assert_eq!(err.message, "revision \"HEAD~5\" is not in this repository");
        assert_eq!(err.hint, "git log --oneline -10");
        let unknown = "0123456789abcdef0123456789abcdef01234567";
        let err = read_at_revision(&lock, unknown).unwrap_err();
        assert_eq!(
            err.message,
            format!("revision \"{unknown}\" is not in this repository")
        );
        assert_eq!(err.hint, format!("git fetch origin {unknown}"));

        let err = read_at_revision(&lock, "FETCH_HEAD").unwrap_err();
        assert_eq!(
            err.message,
            "revision \"FETCH_HEAD\" is not in this repository"
        );
        assert_eq!(err.hint, "git fetch origin");

        // With one remote, not called origin, hints name it.
        git(
            &dir,
            &["remote", "add", "upstream", "https://example.com/x.git"],
        );
        let err = read_at_revision(&lock, "upstream/dev").unwrap_err();
        assert_eq!(err.hint, "git fetch upstream dev:refs/remotes/upstream/dev");
        let err = read_at_revision(&lock, "v9").unwrap_err();
        assert_eq!(err.hint, "git fetch upstream v9");
    }

    #[test]
    fn ambiguous_abbreviation() {
        let (_temp, dir) = canonical_tempdir();
        repo_with_history(&dir);
        // Enough blobs that two share a 4-digit prefix (libgit2's shortest abbreviation).
        let repo = Repository::open(&dir).unwrap();
        let mut seen = std::collections::HashMap::new();
        let prefix = (0..5000)
            .find_map(|i| {
                let id = repo
                    .blob(format!("blob {i}\n").as_bytes())
                    .unwrap()
                    .to_string();
                seen.insert(id[..4].to_string(), id.clone())
                    .map(|_| id[..4].to_string())
            })
            .expect("a shared prefix");
        let err = read_at_revision(&dir.join("mcp.lock"), &prefix).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!("revision \"{prefix}\" is ambiguous in this repository")
        );
        assert_eq!(err.hint, format!("git rev-parse --disambiguate={prefix}"));
    }

    #[test]
    fn shallow_clone() {
        let (_temp, dir) = canonical_tempdir();
        let origin = dir.join("origin");
        std::fs::create_dir(&origin).unwrap();
        let [first, _, third] = repo_with_history(&origin);
        let url = format!("file://{}", origin.display());
        git(&dir, &["clone", "-q", "--depth", "1", &url, "shallow"]);
        let shallow = dir.join("shallow");
        let lock = shallow.join("mcp.lock");
        assert_eq!(read(&lock, "HEAD").as_deref(), Some("three\n"));
        assert_eq!(read(&lock, "origin/main").as_deref(), Some("three\n"));
        assert_eq!(read(&lock, &third[..10]).as_deref(), Some("three\n"));

        // Beyond the boundary, libgit2 cannot tell an unfetched SHA from a bogus one.
        let err = read_at_revision(&lock, &first).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!("revision \"{first}\" is not in this repository (this is a shallow clone)")
        );
        assert_eq!(err.hint, format!("git fetch --depth=1 origin {first}"));
        // What CI does: fetch the base commit alone, then read it by SHA or FETCH_HEAD.
        run_hint(&shallow, &err.hint);
        assert_eq!(read(&lock, &first).as_deref(), Some("one\n"));
        assert_eq!(read(&lock, "FETCH_HEAD").as_deref(), Some("one\n"));
        assert_eq!(read(&shallow.join("new.lock"), "FETCH_HEAD"), None);
        assert_eq!(
            read(&shallow.join("old/mcp.lock"), &first).as_deref(),
            Some("old\n")
        );
        assert_eq!(read(&lock, "HEAD").as_deref(), Some("three\n"));

        // A depth-1 clone is single-branch: other branches need an explicit destination.
        let err = read_at_revision(&lock, "origin/release").unwrap_err();
        assert_eq!(
            err.message,
            "revision \"origin/release\" is not in this repository (this is a shallow clone)"
        );
        assert_eq!(
            err.hint,
            "git fetch --depth=1 origin release:refs/remotes/origin/release"
        );
        run_hint(&shallow, &err.hint);
        assert_eq!(read(&lock, "origin/release").as_deref(), Some("two\n"));

        // The grafted boundary commit has no parent.
        let err = read_at_revision(&lock, "HEAD~2").unwrap_err();
        assert_eq!(
            err.message,
            "revision \"HEAD~2\" is not in this repository (this is a shallow clone)"
        );
        assert_eq!(err.hint, "git fetch --deepen=50");
        run_hint(&shallow, &err.hint);
        assert_eq!(read(&lock, "HEAD~2").as_deref(), Some("one\n"));
    }

    #[test]
    fn ref_to_a_commit_past_the_shallow_boundary() {
        let (_temp, dir) = canonical_tempdir();
        let origin = dir.join("origin");
        std::fs::create_dir(&origin).unwrap();
        let [first, _, _] = repo_with_history(&origin);
        let url = format!("file://{}", origin.display());
        git(&dir, &["clone", "-q", "--depth", "1", &url, "shallow"]);
        git(&origin, &["branch", "ghost", &first]);
        let shallow = dir.join("shallow");
        // git refuses to write a ref to an absent object, so write it by hand.
        write(
            &shallow.join(".git/refs/heads/ghost"),
            format!("{first}\n").as_bytes(),
        );
        write(
            &shallow.join(".git/refs/remotes/origin/ghost"),
            format!("{first}\n").as_bytes(),
        );
        let lock = shallow.join("mcp.lock");
        let err = read_at_revision(&lock, "ghost").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            "the commit of \"ghost\" is not in this shallow clone"
        );
        assert_eq!(err.hint, format!("git fetch --depth=1 origin {first}"));
        let err = read_at_revision(&lock, "origin/ghost").unwrap_err();
        assert_eq!(
            err.message,
            "the commit of \"origin/ghost\" is not in this shallow clone"
        );
        assert_eq!(
            err.hint,
            "git fetch --depth=1 origin ghost:refs/remotes/origin/ghost"
        );
        run_hint(&shallow, &err.hint);
        assert_eq!(read(&lock, "origin/ghost").as_deref(), Some("one\n"));
        assert_eq!(read(&lock, "ghost").as_deref(), Some("one\n"));
    }

    /// Deletes the loose object `id` (fresh commits are stored loose, not packed).
    fn delete_object(repo: &Path, id: &str) {
        let path = repo.join(".git/objects").join(&id[..2]).join(&id[2..]);
        std::fs::remove_file(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    }

    #[test]
    fn missing_tree_and_blob() {
        let (_temp, dir) = canonical_tempdir();
        let [first, second, _] = repo_with_history(&dir);
        let tree = git(&dir, &["rev-parse", &format!("{first}^{{tree}}")]);
        delete_object(&dir, &tree);
        let err = read_at_revision(&dir.join("mcp.lock"), &first).unwrap_err();
        assert_eq!(
            err.message,
            format!("the tree of \"{first}\" is missing from this repository")
        );
        assert_eq!(err.hint, format!("git fetch origin {first}"));

        let blob = git(&dir, &["rev-parse", "release:sub/dir/mcp.lock"]);
        delete_object(&dir, &blob);
        let lock = dir.join("sub/dir/mcp.lock");
        let err = read_at_revision(&lock, "release").unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "the content of {} at \"release\" is missing from this repository",
                lock.display()
            )
        );
        assert_eq!(err.hint, format!("git fetch origin {second}"));
    }

    #[test]
    fn not_utf8_directory_and_symlink() {
        let (_temp, dir) = canonical_tempdir();
        git(&dir, &["init", "-q"]);
        write(&dir.join("mcp.lock"), &[0xff, 0xfe, b'\n']);
        write(&dir.join("sub/dir/x"), b"x\n");
        #[cfg(unix)]
        std::os::unix::fs::symlink("mcp.lock", dir.join("link.lock")).unwrap();
        commit_all(&dir, "binary");
        let lock = dir.join("mcp.lock");
        let err = read_at_revision(&lock, "HEAD").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Lockfile);
        assert_eq!(
            err.message,
            format!("{} at \"HEAD\" is not UTF-8 text", lock.display())
        );
        assert_eq!(err.hint, "git show HEAD:mcp.lock");
        let err = read_at_revision(&dir.join("sub/dir"), "HEAD").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Lockfile);
        assert_eq!(
            err.message,
            format!(
                "{} is a directory at \"HEAD\", not a file",
                dir.join("sub/dir").display()
            )
        );
        assert_eq!(err.hint, "git ls-tree HEAD sub/dir");
        #[cfg(unix)]
        {
            let err = read_at_revision(&dir.join("link.lock"), "HEAD").unwrap_err();
            assert_eq!(
                err.message,
                format!(
                    "{} is a symbolic link at \"HEAD\", not a file",
                    dir.join("link.lock").display()
                )
            );
        }
    }

    #[test]
    fn path_outside_the_work_tree() {
        let (_temp, dir) = canonical_tempdir();
        let repo = dir.join("repo");
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        git(&repo, &["init", "-q"]);
        git(
            &repo,
            &["config", "core.worktree", &elsewhere.to_string_lossy()],
        );
        let lock = repo.join("mcp.lock");
        let err = read_at_revision(&lock, "HEAD").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!(
                "{} is outside the work tree {} of its git repository",
                lock.display(),
                elsewhere.display()
            )
        );
    }

    #[test]
    fn partial_clone() {
        let (_temp, dir) = canonical_tempdir();
        let origin = dir.join("origin");
        std::fs::create_dir(&origin).unwrap();
        let [first, _, _] = repo_with_history(&origin);
        git(&origin, &["config", "uploadpack.allowFilter", "true"]);
        let url = format!("file://{}", origin.display());
        git(
            &dir,
            &["clone", "-q", "--filter=blob:none", &url, "partial"],
        );
        let partial = dir.join("partial");
        let lock = partial.join("sub/dir/mcp.lock");
        // Checkout fetched HEAD's blobs; older ones are promised, not present.
        assert_eq!(read(&lock, "origin/main").as_deref(), Some("nested two\n"));
        let err = read_at_revision(&lock, &first).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!(
                "the content of {} at \"{first}\" is not in this partial clone",
                lock.display()
            )
        );
        assert_eq!(
            err.hint,
            format!("git cat-file -e {first}:sub/dir/mcp.lock")
        );
        // The hint works: git fetches the promised blob.
        git(
            &partial,
            &["cat-file", "-e", &format!("{first}:sub/dir/mcp.lock")],
        );
        assert_eq!(read(&lock, &first).as_deref(), Some("nested one\n"));

        // Older git marked partial clones with an extension libgit2 refuses to open.
        git(&partial, &["config", "extensions.partialClone", "origin"]);
        let sub = partial.join("sub/dir");
        let err = read_at_revision(&lock, "origin/main").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Usage);
        assert_eq!(
            err.message,
            format!(
                "cannot read the git repository containing {}: catalock does not support partial clones",
                sub.display()
            )
        );
        assert_eq!(
            err.hint,
            format!(
                "git -C {} show origin/main:./mcp.lock > base.lock, then use --baseline base.lock",
                sub.display()
            )
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("origin/main"), "origin/main");
        assert_eq!(quote("HEAD~1"), "'HEAD~1'");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }

    /// An environment with the machine's config switched off, plus `vars`.
    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: Vec<(String, String)> = [
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ]
        .iter()
        .chain(vars)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        move |key| {
            vars.iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn identity_from_repository_config() {
        let (_temp, dir) = canonical_tempdir();
        git(&dir, &["init", "-q"]);
        let nested = dir.join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(identity_with(&nested, &env_of(&[])), None);
        git(&dir, &["config", "user.name", "Ada Lovelace"]);
        assert_eq!(
            identity_with(&nested, &env_of(&[])).as_deref(),
            Some("Ada Lovelace")
        );
        git(&dir, &["config", "user.email", "ada@example.com"]);
        assert_eq!(
            identity_with(&nested, &env_of(&[])).as_deref(),
            Some("Ada Lovelace <ada@example.com>")
        );
        let env = env_of(&[("GIT_AUTHOR_NAME", "Grace Hopper")]);
        assert_eq!(
            identity_with(&nested, &env).as_deref(),
            Some("Grace Hopper <ada@example.com>")
        );
        let env = env_of(&[
            ("GIT_AUTHOR_NAME", "Grace Hopper"),
            ("GIT_AUTHOR_EMAIL", "grace@example.com"),
        ]);
        assert_eq!(
            identity_with(&nested, &env).as_deref(),
            Some("Grace Hopper <grace@example.com>")
        );
    }

    #[test]
    fn identity_from_global_config_and_none() {
        let (_temp, dir) = canonical_tempdir();
        let work = dir.join("work");
        std::fs::create_dir(&work).unwrap();
        assert_eq!(identity_with(&work, &env_of(&[])), None);
        // Only an email, or an empty name, is no identity.
        assert_eq!(
            identity_with(&work, &env_of(&[("EMAIL", "x@example.com")])),
            None
        );
        assert_eq!(
            identity_with(&work, &env_of(&[("GIT_AUTHOR_NAME", " ")])),
            None
        );
        let global = dir.join("gitconfig");
        write(&global, b"[user]\n\tname = Global Name\n");
        let global = global.to_string_lossy().into_owned();
        let env = env_of(&[
            ("GIT_CONFIG_GLOBAL", &global),
            ("EMAIL", "fallback@example.com"),
        ]);
        assert_eq!(
            identity_with(&work, &env).as_deref(),
            Some("Global Name <fallback@example.com>")
        );
        // The repository's config wins over the global one.
        git(&work, &["init", "-q"]);
        git(&work, &["config", "user.name", "Local Name"]);
        assert_eq!(
            identity_with(&work, &env).as_deref(),
            Some("Local Name <fallback@example.com>")
        );
    }
}

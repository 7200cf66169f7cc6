//! The commands: each turns its arguments into a [`Report`] (or a lock summary) and an exit
//! code. Nothing here parses arguments or touches the process; `main.rs` does that.

use std::io::Write;
use std::path::Path;

use crate::build::{BuildOptions, Detail, build_server};
use crate::capture::Capture;
use crate::cli::{
    CheckArgs, Cli, Command, DiffArgs, FmtArgs, Format, LiveArgs, LockArgs, VerifyArgs,
};
use crate::diff::{diff_lockfiles, diff_servers};
use crate::error::{Error, ErrorKind};
use crate::lockfile::{LockFile, LockedServer, ReadLockFile, read_lockfile, validate_server_name};
use crate::report::{Outcome, Report};
use crate::verify::{Depth, Finding, verify_lockfile};
use crate::{EXIT_DIFFERENT, EXIT_SAME, EXIT_TROUBLE};

/// Runs a parsed command line, writing results to `out` and diagnostics to `err`.
pub fn run(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let result = match &cli.command {
        Command::Lock(args) => lock(args, out),
        Command::Check(args) => reported(
            "check",
            &args.output,
            check(args).map(|mut report| {
                // Annotations and code scanning name files from the repository's root.
                report.lockfile = Some(
                    crate::git::path_in_repository(Path::new(&args.lockfile))
                        .unwrap_or_else(|| args.lockfile.clone()),
                );
                report
            }),
            out,
            err,
            ("locked", "live"),
        ),
        Command::Diff(args) => reported("diff", &args.output, diff(args), out, err, ("old", "new")),
        Command::Verify(args) => reported("verify", &args.output, verify(args), out, err, ("", "")),
        Command::Fmt(args) => fmt(args, out),
        Command::Explain(args) => explain(args, out),
        Command::Approve(args) => approve(args, out),
        Command::Deprecate(args) => deprecate(args, out),
        Command::Init(args) => crate::init::init(args, out, err),
        Command::Show(args) => show(args, out),
        Command::Digest(args) => digest(args, out),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut command, "catalock", &mut script);
            write_output(out, &String::from_utf8_lossy(&script)).map(|()| EXIT_SAME)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(|e| Error::io(format!("cannot render the man page: {e}"), "report a bug"))
                .and_then(|()| write_output(out, &String::from_utf8_lossy(&page)))
                .map(|()| EXIT_SAME)
        }
    };
    // Servers shut down in the background while the lockfile was written; none outlives us.
    crate::live::stdio::wait_for_shutdowns();
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = write!(
                err,
                "{}",
                Report::from_error(command_name(&cli.command), &error).to_text(("", ""))
            );
            EXIT_TROUBLE
        }
    }
}

fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Lock(_) => "lock",
        Command::Check(_) => "check",
        Command::Diff(_) => "diff",
        Command::Verify(_) => "verify",
        Command::Fmt(_) => "fmt",
        Command::Explain(_) => "explain",
        Command::Approve(_) => "approve",
        Command::Deprecate(_) => "deprecate",
        Command::Init(_) => "init",
        Command::Show(_) => "show",
        Command::Digest(_) => "digest",
        Command::Completions(_) => "completions",
        Command::Man => "man",
    }
}

/// Prints a report in the chosen format. In JSON mode errors are reports too, on stdout, so
/// a script always gets one parseable document.
fn reported(
    command: &str,
    output: &crate::cli::OutputArgs,
    result: Result<Report, Error>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    sides: (&str, &str),
) -> Result<u8, Error> {
    let to_stdout = output.formats.iter().filter(|f| f.path.is_none()).count();
    if to_stdout > 1 {
        return Err(Error::usage(
            "only one --format can go to standard output",
            "give the others a file: --format sarif=catalock.sarif",
        ));
    }
    let mut paths: Vec<&std::path::Path> = output
        .formats
        .iter()
        .filter_map(|f| f.path.as_deref())
        .collect();
    paths.sort();
    if let Some(pair) = paths.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::usage(
            format!("two --format options write {}", pair[0].display()),
            "give each format its own file",
        ));
    }
    let report = match result {
        Ok(report) => report,
        // Only plain text shows an error as the error line on stderr; every other format
        // gets a report of its own, so a script or CI step always has one document.
        Err(error) if output.formats.iter().all(|f| f.format == Format::Text) => {
            return Err(error);
        }
        Err(error) => {
            // With nothing on stdout, the error still reaches the terminal or CI log.
            if to_stdout == 0 {
                let _ = write_output(err, &Report::from_error(command, &error).to_text(("", "")));
            }
            Report::from_error(command, &error)
        }
    };
    for spec in &output.formats {
        let text = match spec.format {
            // Styled for a terminal; the stream drops the styles elsewhere (main.rs).
            Format::Text if spec.path.is_none() => crate::report::styled(&report.to_text(sides)),
            Format::Text => report.to_text(sides),
            Format::Json => report.to_json(),
            Format::Markdown => crate::render::markdown(&report),
            Format::Github => crate::render::github(&report),
            Format::Sarif => crate::render::sarif(&report),
            Format::Junit => crate::render::junit(&report),
        };
        match &spec.path {
            Some(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        Error::io(
                            format!(
                                "cannot create {}: {}",
                                parent.display(),
                                crate::error::io_reason(&e)
                            ),
                            "give --format a writable path",
                        )
                    })?;
                }
                crate::lockfile::write_atomic(path, text.as_bytes())?
            }
            None if report.outcome == Outcome::Error && spec.format == Format::Text => {
                write_output(err, &text)?
            }
            None => write_output(out, &text)?,
        }
    }
    Ok(report.exit_code)
}

fn write_output(target: &mut dyn Write, text: &str) -> Result<(), Error> {
    match target
        .write_all(text.as_bytes())
        .and_then(|()| target.flush())
    {
        Ok(()) => Ok(()),
        // A closed pipe (`catalock check | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io(
            format!("cannot write output: {}", crate::error::io_reason(&e)),
            "check where stdout goes",
        )),
    }
}

/// Shell-quotes one argument for a command the user can paste.
pub fn shell_quote(arg: &str) -> String {
    let safe = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if safe {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The command that locks a source (its arguments, see [`source_args`]) as server `name`
/// into `lockfile`.
fn lock_command(source: &[String], name: &str, lockfile: &str) -> String {
    let mut parts = vec!["catalock".to_string(), "lock".to_string()];
    // Options first: a stdio source ends the line with `-- COMMAND ...`.
    let (options, command): (Vec<&String>, Vec<&String>) =
        match source.iter().position(|a| a == "--") {
            Some(i) => (source[..i].iter().collect(), source[i..].iter().collect()),
            None => (source.iter().collect(), Vec::new()),
        };
    parts.extend(options.into_iter().cloned());
    let mut tail: Vec<String> = command.into_iter().cloned().collect();
    parts.push("--name".to_string());
    parts.push(shell_quote(name));
    if lockfile != crate::cli::DEFAULT_LOCKFILE {
        parts.push("--lockfile".to_string());
        parts.push(shell_quote(lockfile));
    }
    parts.append(&mut tail);
    parts.join(" ")
}

/// Reads a lockfile and refuses it unless every digest matches its content.
fn read_trusted(path: &str) -> Result<(ReadLockFile, Vec<String>), Error> {
    let read = read_lockfile(Path::new(path))?;
    let notes = trust(path, verify_lockfile(&read, Depth::Digests))?;
    Ok((read, notes))
}

/// Refuses a lockfile whose digests do not match its content; a form that is merely not
/// canonical becomes a note.
fn trust(path: &str, findings: Vec<Finding>) -> Result<Vec<String>, Error> {
    let (fatal, cosmetic): (Vec<Finding>, Vec<Finding>) = findings
        .into_iter()
        .partition(|f| f.code != "not-canonical");
    if let Some(first) = fatal.first() {
        return Err(untrusted(path, first, fatal.len()));
    }
    Ok(cosmetic
        .into_iter()
        .map(|f| format!("{} (run `catalock fmt` to rewrite it)", f.message))
        .collect())
}

fn untrusted(path: &str, first: &Finding, count: usize) -> Error {
    let mut place = format!("{path}:{}", first.line);
    if let Some(server) = &first.server {
        place.push_str(&format!(": server `{server}`"));
    }
    if let Some(entry) = &first.entry {
        place.push_str(&format!(", {entry}"));
    }
    let more = if count > 1 {
        format!(" (and {} more)", count - 1)
    } else {
        String::new()
    };
    Error::new(
        ErrorKind::Untrusted,
        format!(
            "{place}: {}{more}; the lockfile does not match its own digests, so it cannot be trusted",
            first.message
        ),
        format!(
            "run `catalock verify --lockfile {}` to list every problem, then restore the file from git or relock",
            shell_quote(path)
        ),
    )
}

/// Picks the entry a single-server source is compared with.
fn pick_entry<'a>(
    lockfile: &'a LockFile,
    wanted: Option<&str>,
    derived: &str,
    label: &str,
) -> Result<&'a LockedServer, Error> {
    if let Some(name) = wanted {
        return lockfile
            .server(name)
            .ok_or_else(|| no_entry(lockfile, name, label));
    }
    if let Some(server) = lockfile.server(derived) {
        return Ok(server);
    }
    match lockfile.servers.as_slice() {
        [only] => Ok(only),
        _ => Err(no_entry(lockfile, derived, label)),
    }
}

fn no_entry(lockfile: &LockFile, name: &str, label: &str) -> Error {
    let names: Vec<&str> = lockfile.servers.iter().map(|s| s.name.as_str()).collect();
    if names.is_empty() {
        Error::usage(
            format!("{label} locks no servers yet"),
            "create the entry with `catalock lock --from CAPTURE --name NAME`",
        )
    } else {
        Error::usage(
            format!(
                "{label} has no server `{name}` (it has: {})",
                names.join(", ")
            ),
            format!(
                "pass --name with one of those, or lock it: catalock lock --from CAPTURE --name {}",
                shell_quote(name)
            ),
        )
    }
}

fn server_name(capture: &Capture, wanted: Option<&str>) -> Result<String, Error> {
    match wanted {
        Some(name) => {
            validate_server_name(name)?;
            Ok(name.to_string())
        }
        None => Ok(capture.default_server_name()),
    }
}

fn lock(args: &LockArgs, out: &mut dyn Write) -> Result<u8, Error> {
    if no_source(&args.from, &args.live)
        && let Some(config) = load_config(&args.live)?
    {
        return lock_all(args, &config, out);
    }
    let source = source(&args.from, &args.live, "lock")?;
    // Counting tokens needs the tokenizer's tables only for tools not locked before.
    let relock =
        read_lockfile(Path::new(&args.lockfile)).is_ok_and(|r| match args.name.as_deref() {
            Some(name) => r.lockfile.server(name).is_some(),
            None => !r.lockfile.servers.is_empty(),
        });
    if !relock {
        warm_tokenizer(&source);
    }
    let client = client_identity(&args.live, None)?;
    let capture = acquire(&source, &args.live, &client)?;
    let name = server_name(&capture, args.name.as_deref())?;
    let path = Path::new(&args.lockfile);

    // An existing lockfile must be readable and sound: its other entries are carried over, and
    // overwriting a file catalock cannot read could lose them.
    let existing = if path.exists() {
        let read = read_lockfile(path)?;
        let findings = verify_lockfile(&read, Depth::Digests);
        if let Some(first) = findings
            .iter()
            .find(|f| f.code != "not-canonical" && f.server.as_deref() != Some(name.as_str()))
        {
            let count = findings
                .iter()
                .filter(|f| f.code != "not-canonical" && f.server.as_deref() != Some(name.as_str()))
                .count();
            return Err(untrusted(&args.lockfile, first, count));
        }
        let entry_sound = !findings
            .iter()
            .any(|f| f.server.as_deref() == Some(name.as_str()));
        Some((read, entry_sound))
    } else {
        None
    };
    let previous = existing
        .as_ref()
        .filter(|(_, sound)| *sound)
        .and_then(|(read, _)| read.lockfile.server(&name));

    let server = build_server(
        &capture,
        &BuildOptions {
            name: name.clone(),
            source: capture.describe(),
            previous,
            detail: Detail::Full,
        },
    )?;
    let mut dropped = Vec::new();
    if let Some(old) = previous {
        let (was, now) = (
            crate::build::Coverage::of(old),
            crate::build::Coverage::of(&server),
        );
        for (what, before, after) in [
            ("instructions", was.instructions, now.instructions),
            ("prompts", was.prompts, now.prompts),
            (
                "resource templates",
                was.resource_templates,
                now.resource_templates,
            ),
        ] {
            if before && !after {
                dropped.push(what);
            }
        }
    }
    let status = match previous {
        Some(old) if same_entry(old, &server) => "unchanged",
        Some(_) => "updated",
        None => "added",
    };
    let summary = format!(
        "{status} server `{}`: {} tools, {} tokens, {}",
        server.name,
        server.tool_count,
        server.total_tokens,
        server.server_digest.short()
    );
    let (mut lockfile, was_canonical) = match existing {
        Some((read, _)) => (read.lockfile, read.canonical),
        None => (LockFile::default(), false),
    };
    let needs_write = status != "unchanged" || !was_canonical;
    lockfile.upsert(server);
    if needs_write {
        lockfile.write_atomic(path)?;
    }
    let mut text = String::new();
    for note in &capture.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    if !dropped.is_empty() {
        text.push_str(&format!(
            "note: the previous entry also locked {}; this capture has none, so the entry no longer covers them (add their captures with --from to keep them)\n",
            dropped.join(", ")
        ));
    }
    text.push_str(&summary);
    text.push_str(&format!(
        " ({})\n",
        if needs_write {
            format!("wrote {}", args.lockfile)
        } else {
            format!("{} already current", args.lockfile)
        }
    ));
    write_output(out, &text)?;
    Ok(EXIT_SAME)
}

/// Two entries are the same when everything but file positions is equal.
fn same_entry(a: &LockedServer, b: &LockedServer) -> bool {
    let strip = |s: &LockedServer| {
        let mut s = s.clone();
        s.line = 0;
        s.tools.iter_mut().for_each(|t| t.line = 0);
        s.prompts.iter_mut().for_each(|p| p.line = 0);
        s.resource_templates.iter_mut().for_each(|t| t.line = 0);
        s
    };
    strip(a) == strip(b)
}

fn check(args: &CheckArgs) -> Result<Report, Error> {
    let governance = crate::config::load_governance(Path::new(&args.config))?;
    let base = args.base.chosen();
    let Some(base) = base else {
        return drift(args, &governance);
    };
    // Review: the pull request's changes, judged; plus drift when a server can be reached.
    let (base_lockfile, label) = crate::review::read_base(&base, &args.lockfile)?;
    let (work, mut notes) = read_trusted(&args.lockfile)?;
    let (governance, policy_notes) =
        crate::review::governance_for_review(governance, &base, &args.config)?;
    notes.extend(policy_notes);
    let review = crate::review::review(
        &base_lockfile,
        &work.lockfile,
        &governance,
        &label,
        &approve_base_args(&base, &args.lockfile, &args.config),
    );
    let reachable = !no_source(&args.from, &args.live) || load_config(&args.live)?.is_some();
    let mut drift_failed = false;
    let mut report = if reachable {
        match drift(args, &governance) {
            Ok(mut report) => {
                report.drift_checked = true;
                report.drifted = report.outcome == Outcome::Changed;
                report
            }
            // The review is still worth showing (a fork's PR may lack a server's secrets);
            // the run as a whole could not decide, so it exits 2.
            Err(error) => {
                drift_failed = true;
                notes.push(format!(
                    "drift could not be checked: {} (hint: {})",
                    error.message, error.hint
                ));
                Report::new("check", Outcome::Match)
            }
        }
    } else {
        notes.push(format!(
            "drift not checked: no server to reach (give --from, a command, --url, or [[server]] entries in {})",
            args.config
        ));
        Report::new("check", Outcome::Match)
    };
    report.notes.extend(notes);
    if drift_failed {
        report.set_outcome(Outcome::Error);
    } else if review.failing > 0 {
        report.set_outcome(Outcome::Changed);
    }
    report.review = Some(review);
    Ok(report)
}

fn approve_base_args(base: &crate::review::Base, lockfile: &str, config: &str) -> String {
    let mut args = base.args();
    if lockfile != crate::cli::DEFAULT_LOCKFILE {
        args.push_str(&format!(" --lockfile {}", shell_quote(lockfile)));
    }
    if config != crate::config::CONFIG_FILE {
        args.push_str(&format!(" --config {}", shell_quote(config)));
    }
    args
}

/// Whether the server reports another `serverInfo.version` than the lockfile records, the
/// contract being equal: the lockfile must describe reality, since the version policy reads
/// versions from it. Says so in the diff's notes.
fn version_drift(
    entry: &LockedServer,
    live: &LockedServer,
    server_diff: &mut crate::diff::ServerDiff,
) -> bool {
    let (locked, now) = (
        crate::classify::server_version(entry),
        crate::classify::server_version(live),
    );
    let (Some(locked), Some(now)) = (locked, now) else {
        return false;
    };
    if locked == now {
        return false;
    }
    server_diff.notes.push(format!(
        "serverInfo.version is {now:?}, the lockfile records {locked:?}: relock so the version policy judges the real version"
    ));
    true
}

/// The readable, classified drift of one entry: the capture built in full (reusing the
/// entry's token counts) and compared with it. Only runs once the digests differ.
fn full_drift_diff(
    entry: &LockedServer,
    capture: &Capture,
    governance: &crate::config::Governance,
) -> Result<crate::diff::ServerDiff, Error> {
    let options = BuildOptions {
        name: entry.name.clone(),
        source: capture.describe(),
        previous: Some(entry),
        detail: Detail::Full,
    };
    let live = build_server(capture, &options)?;
    let mut server_diff = diff_servers(entry, &live);
    server_diff.changes = crate::classify::classify_server(
        Some(entry),
        Some(&live),
        &crate::review::drift_context(governance, &entry.name),
    );
    Ok(server_diff)
}

/// Drift: does the live (or captured) contract equal the committed lockfile?
fn drift(args: &CheckArgs, governance: &crate::config::Governance) -> Result<Report, Error> {
    if no_source(&args.from, &args.live)
        && let Some(config) = load_config(&args.live)?
    {
        return check_all(args, &config, governance);
    }
    let source = source(&args.from, &args.live, "check")?;
    let digest_capture = |capture: Capture| -> Result<(Capture, LockedServer), Error> {
        let name = capture.default_server_name();
        let options = BuildOptions {
            name,
            source: capture.describe(),
            previous: None,
            detail: Detail::Skeleton,
        };
        let skeleton = build_server(&capture, &options)?;
        Ok((capture, skeleton))
    };
    let lockfile_path = Path::new(&args.lockfile);
    let (index, live) = match &source {
        // A capture: the lockfile is verified on one thread while the capture is digested on
        // the others; both keep only digests, so memory holds the capture text and little else.
        Source::Files(_) => std::thread::scope(|scope| {
            let index = scope.spawn(|| crate::verify::read_verified_digests(lockfile_path));
            let live = acquire(&source, &args.live, &crate::live::ClientIdentity::default())
                .and_then(digest_capture);
            (index.join().expect("lockfile reader panicked"), live)
        }),
        // A live server is asked what `lock` asked, which the entry records.
        Source::Stdio(_) | Source::Http(_) => {
            let index = crate::verify::read_verified_digests(lockfile_path)?;
            let recorded = match args.name.as_deref() {
                Some(name) => index.0.lockfile.server(name),
                None => match index.0.lockfile.servers.as_slice() {
                    [only] => Some(only),
                    _ => None,
                },
            };
            let client = client_identity(&args.live, recorded)?;
            let live = acquire(&source, &args.live, &client).and_then(digest_capture);
            (Ok(index), live)
        }
    };
    let (read, findings) = index?;
    let mut notes = trust(&args.lockfile, findings)?;
    let (capture, mut skeleton) = live?;
    let entry = pick_entry(
        &read.lockfile,
        args.name.as_deref(),
        &skeleton.name,
        &args.lockfile,
    )?;
    skeleton.name = entry.name.clone();
    notes.extend(capture.notes.iter().cloned());
    // Captures are named after their files, which differ from run to run; only a different
    // kind of source (a capture against a live server, say) is worth a note.
    let kind = |source: &str| source.split(':').next().unwrap_or("").to_string();
    if kind(&entry.source) != kind(&skeleton.source)
        || (kind(&entry.source) != "capture" && entry.source != skeleton.source)
    {
        notes.push(format!(
            "source differs from the recorded one: locked from {:?}, checked {:?}",
            entry.source, skeleton.source
        ));
    }
    let mut server_diff = diff_servers(entry, &skeleton);
    if server_diff.is_change() {
        // The readable diff needs content: read both sides again in full (only on failure).
        let full = read_lockfile(Path::new(&args.lockfile))?;
        let entry = full
            .lockfile
            .server(&skeleton.name)
            .expect("entry was found in the same file");
        server_diff = full_drift_diff(entry, &capture, governance)?;
    }
    let changed = server_diff.is_change() || version_drift(entry, &skeleton, &mut server_diff);
    let mut report = Report::new(
        "check",
        if changed {
            Outcome::Changed
        } else {
            Outcome::Match
        },
    );
    if changed {
        report.accept = Some(lock_command(
            &source_args_with(&source, Some(&args.live)),
            &skeleton.name,
            &args.lockfile,
        ));
    }
    if changed || !server_diff.notes.is_empty() || !server_diff.coverage.is_empty() {
        report.servers.push(server_diff);
    }
    report.notes = notes;
    Ok(report)
}

/// One side of `catalock diff`: a lockfile, or a capture built into a one-server lockfile.
fn load_side(
    path: &str,
    name: Option<&str>,
    other: Option<&LockFile>,
) -> Result<(LockFile, bool), Error> {
    let text = crate::capture::read_text(path)?;
    if looks_like_lockfile(&text) {
        let label = crate::capture::display_label(path);
        let read = crate::lockfile::parse_lockfile(&text, &label)?;
        let findings = verify_lockfile(&read, Depth::Digests);
        if let Some(first) = findings.iter().find(|f| f.code != "not-canonical") {
            return Err(untrusted(
                path,
                first,
                findings
                    .iter()
                    .filter(|f| f.code != "not-canonical")
                    .count(),
            ));
        }
        return Ok((read.lockfile, true));
    }
    let mut capture = Capture::default();
    capture.add_source(path.to_string(), text)?;
    if capture.tools.is_none() {
        return Err(Error::input(
            format!("{path} holds no tools/list result"),
            "give a lockfile or a tools/list capture",
        ));
    }
    let derived = capture.default_server_name();
    let name = match name {
        Some(n) => {
            validate_server_name(n)?;
            n.to_string()
        }
        None => match other.map(|o| o.servers.as_slice()) {
            Some([only]) => only.name.clone(),
            _ => derived.clone(),
        },
    };
    let previous = other.and_then(|o| o.server(&name));
    let server = build_server(
        &capture,
        &BuildOptions {
            name,
            source: capture.describe(),
            previous,
            detail: Detail::Full,
        },
    )?;
    let mut lockfile = LockFile::default();
    lockfile.upsert(server);
    Ok((lockfile, false))
}

/// Captures are JSON: they start with `{`, or with `[` that opens an array rather than a
/// TOML table header (`[name]`, `[[name]]`). Everything else is read as a lockfile, so a
/// wrong file gets the lockfile's error messages.
fn looks_like_lockfile(text: &str) -> bool {
    let first = text
        .trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let toml_header = first.starts_with('[')
        && first
            .split('#')
            .next()
            .unwrap_or("")
            .trim_end()
            .ends_with(']')
        && first
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _.-[]\"'#".contains(c));
    !(first.starts_with('{') || first.starts_with('[') && !toml_header)
}

fn diff(args: &DiffArgs) -> Result<Report, Error> {
    let (old, old_is_lockfile) = load_side(&args.old, args.name.as_deref(), None)?;
    let (new, new_is_lockfile) = load_side(&args.new, args.name.as_deref(), Some(&old))?;
    // A capture on the old side is named after the new side's single entry, so they meet.
    let old = if !old_is_lockfile
        && new.servers.len() == 1
        && old.servers.len() == 1
        && old.servers[0].name != new.servers[0].name
    {
        let mut renamed = old;
        renamed.servers[0].name = new.servers[0].name.clone();
        renamed
    } else {
        old
    };
    let governance = crate::config::load_governance(Path::new(&args.config))?;
    let mut servers = diff_lockfiles(&old, &new);
    for server_diff in &mut servers {
        let (a, b) = (
            old.server(&server_diff.server),
            new.server(&server_diff.server),
        );
        let relabelled = a
            .zip(b)
            .is_some_and(|(a, b)| a.server_info != b.server_info);
        if server_diff.is_change() || relabelled {
            server_diff.changes = crate::classify::classify_server(
                a,
                b,
                &crate::review::context_for(&governance, &server_diff.server),
            );
        }
        if let Some(owner) = b.and_then(|b| crate::review::owner_change(&governance, b)) {
            server_diff.changes.push(owner);
        }
    }
    let changed = servers.iter().any(|s| s.is_change());
    let mut report = Report::new(
        "diff",
        if changed {
            Outcome::Changed
        } else {
            Outcome::Match
        },
    );
    if new_is_lockfile {
        report.lockfile = Some(args.new.clone());
    }
    report.servers = servers
        .into_iter()
        .filter(|s| {
            s.is_change() || !s.notes.is_empty() || !s.coverage.is_empty() || !s.changes.is_empty()
        })
        .collect();
    if changed {
        report.accept = Some(
            if looks_like_lockfile(&crate::capture::read_text(&args.new)?) {
                format!("cp {} {}", shell_quote(&args.new), shell_quote(&args.old))
            } else {
                let name = new
                    .servers
                    .first()
                    .map(|s| s.name.as_str())
                    .unwrap_or("server");
                lock_command(
                    &source_args(&Source::Files(std::slice::from_ref(&args.new))),
                    name,
                    &args.old,
                )
            },
        );
    }
    Ok(report)
}

fn verify(args: &VerifyArgs) -> Result<Report, Error> {
    let read = read_lockfile(Path::new(&args.lockfile))?;
    let findings = verify_lockfile(&read, Depth::Full);
    let mut report = Report::new(
        "verify",
        if findings.is_empty() {
            Outcome::Match
        } else {
            Outcome::Mismatch
        },
    );
    if findings.iter().all(|f| f.code == "not-canonical") && !findings.is_empty() {
        report.accept = Some(format!(
            "catalock fmt --lockfile {}",
            shell_quote(&args.lockfile)
        ));
    }
    report.findings = findings;
    Ok(report)
}

fn fmt(args: &FmtArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let (read, _) = read_trusted(&args.lockfile)?;
    if read.canonical {
        write_output(
            out,
            &format!("{} is already in canonical form\n", args.lockfile),
        )?;
        return Ok(EXIT_SAME);
    }
    if args.check {
        write_output(
            out,
            &format!(
                "{} is not in canonical form; run `catalock fmt --lockfile {}`\n",
                args.lockfile,
                shell_quote(&args.lockfile)
            ),
        )?;
        return Ok(EXIT_DIFFERENT);
    }
    read.lockfile.write_atomic(Path::new(&args.lockfile))?;
    write_output(
        out,
        &format!("rewrote {} in canonical form\n", args.lockfile),
    )?;
    Ok(EXIT_SAME)
}

/// Where `lock` and `check` read a contract from.
enum Source<'a> {
    Files(&'a [String]),
    Stdio(crate::live::stdio::StdioSpec),
    Http(crate::live::http::HttpSpec),
}

fn source<'a>(from: &'a [String], live: &LiveArgs, command: &str) -> Result<Source<'a>, Error> {
    let given = usize::from(!from.is_empty())
        + usize::from(!live.command.is_empty())
        + usize::from(live.url.is_some());
    if given > 1 {
        return Err(Error::usage(
            format!(
                "{command} takes one source: a capture (--from), a stdio server (-- COMMAND) or an HTTP server (--url)"
            ),
            format!(
                "catalock {command} --from tools-list.json, catalock {command} -- node server.js, or catalock {command} --url http://127.0.0.1:3001/mcp"
            ),
        ));
    }
    if !from.is_empty() {
        return Ok(Source::Files(from));
    }
    if let Some(url) = &live.url {
        let mut headers = Vec::new();
        for header in &live.headers {
            let Some((name, value)) = header.split_once(':') else {
                // Never echo the argument: it may be the credential itself.
                return Err(Error::usage(
                    "a --header argument is not NAME: VALUE",
                    "pass --header 'Authorization: Bearer TOKEN'",
                ));
            };
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        return Ok(Source::Http(crate::live::http::HttpSpec {
            url: url.clone(),
            headers,
            label: crate::live::http::redact_url(url),
        }));
    }
    if !live.command.is_empty() {
        let mut env = Vec::new();
        for pair in &live.env {
            let Some((key, value)) = pair.split_once('=') else {
                // Never echo the argument: it may be the secret itself.
                return Err(Error::usage(
                    "an --env argument is not KEY=VALUE",
                    "pass --env KEY=VALUE",
                ));
            };
            env.push((key.to_string(), value.to_string()));
        }
        return Ok(Source::Stdio(crate::live::stdio::StdioSpec {
            command: live.command[0].clone(),
            args: live.command[1..].to_vec(),
            env,
            cwd: live.cwd.clone(),
            label: live.command[0].clone(),
        }));
    }
    Err(Error::usage(
        format!(
            "{command} needs a captured catalog (--from FILE) or a server to start (-- COMMAND [ARGS...]) or reach (--url URL)"
        ),
        format!(
            "catalock {command} --from tools-list.json, or catalock {command} -- npx -y @modelcontextprotocol/server-everything"
        ),
    ))
}

fn limits_of(live: &LiveArgs) -> Result<crate::live::Limits, Error> {
    let seconds = |value: f64, flag: &str| {
        if value.is_finite() && value > 0.0 {
            Ok(std::time::Duration::from_secs_f64(value))
        } else {
            Err(Error::usage(
                format!("--{flag} must be a positive number of seconds"),
                format!("pass --{flag} 30"),
            ))
        }
    };
    Ok(crate::live::Limits {
        request_timeout: seconds(live.timeout, "timeout")?,
        probe_timeout: seconds(live.probe_timeout, "probe-timeout")?,
        total_timeout: seconds(live.total_timeout, "total-timeout")?,
        max_message: live.max_message_bytes,
        max_pages: live.max_pages,
        strict: live.strict,
        ..crate::live::Limits::default()
    })
}

/// The client identity to declare: recorded in `entry` (so `check` asks what `lock` asked),
/// else from `--client-capabilities`, else catalock's default.
fn client_identity(
    live: &LiveArgs,
    entry: Option<&LockedServer>,
) -> Result<crate::live::ClientIdentity, Error> {
    let mut client = crate::live::ClientIdentity::default();
    if let Some(entry) = entry {
        if let Some(info) = entry
            .client_info
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
        {
            client.info = info;
        }
        if let Some(caps) = entry
            .client_capabilities
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
        {
            client.capabilities = caps;
        }
    }
    if let Some(text) = &live.client_capabilities {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            Error::usage(
                format!("--client-capabilities is not JSON: {e}"),
                "pass an object, e.g. --client-capabilities '{\"sampling\":{}}'",
            )
        })?;
        if !value.is_object() {
            return Err(Error::usage(
                "--client-capabilities must be a JSON object",
                "pass an object, e.g. --client-capabilities '{\"sampling\":{}}'",
            ));
        }
        client.capabilities = value;
    }
    Ok(client)
}

/// A path argument inside the working directory, made relative, so the lockfile holds no
/// machine paths and is the same in every clone.
fn portable(arg: &str) -> String {
    if let Ok(cwd) = std::env::current_dir()
        && let Some(rest) = arg.strip_prefix(&format!("{}/", cwd.display()))
    {
        return format!("./{rest}");
    }
    arg.to_string()
}

/// Reads the contract from a source.
fn acquire(
    source: &Source<'_>,
    live: &LiveArgs,
    client: &crate::live::ClientIdentity,
) -> Result<Capture, Error> {
    acquire_as(source, live, client, None, None)
}

/// [`acquire`], recording `written` (a config entry as written, before `${VAR}` expansion)
/// instead of the expanded command or URL, and speaking `protocol` if given.
fn acquire_as(
    source: &Source<'_>,
    live: &LiveArgs,
    client: &crate::live::ClientIdentity,
    written: Option<&crate::config::ConfiguredServer>,
    protocol: Option<&str>,
) -> Result<Capture, Error> {
    let choice = || -> Result<crate::live::ProtocolChoice, Error> {
        protocol
            .unwrap_or(&live.protocol)
            .parse()
            .map_err(|e: String| Error::usage(e, "use --protocol auto"))
    };
    match source {
        Source::Files(paths) => Capture::read_paths(paths),
        Source::Stdio(spec) => {
            let discovered =
                crate::live::discover_stdio(spec, &limits_of(live)?, client, &choice()?)?;
            let (command, args): (String, Vec<String>) = match written {
                Some(w) => (w.command.clone().unwrap_or_default(), w.args.clone()),
                None => (
                    portable(&spec.command),
                    spec.args.iter().map(|a| portable(a)).collect(),
                ),
            };
            let mut shown = vec![shell_quote(&command)];
            shown.extend(args.iter().map(|a| shell_quote(a)));
            let origin = crate::live::Origin {
                transport: "stdio",
                command: Some(command),
                args,
                url: None,
                era: None,
                client: client.clone(),
                authorization: None,
            };
            discovered.into_capture("stdio", format!("stdio: {}", shown.join(" ")), origin)
        }
        Source::Http(spec) => {
            let discovered =
                crate::live::discover_http(spec, &limits_of(live)?, client, &choice()?)?;
            let url = crate::live::http::redact_url(
                written.and_then(|w| w.url.as_deref()).unwrap_or(&spec.url),
            );
            let origin = crate::live::Origin {
                transport: "http",
                command: None,
                args: Vec::new(),
                url: Some(url.clone()),
                era: None,
                client: client.clone(),
                authorization: None,
            };
            discovered.into_capture("http", format!("http: {url}"), origin)
        }
    }
}

/// The live part of a command line that reproduces this source (for "to accept").
fn source_args(source: &Source<'_>) -> Vec<String> {
    source_args_with(source, None)
}

/// [`source_args`] plus the client capabilities the user declared, if any.
fn source_args_with(source: &Source<'_>, live: Option<&LiveArgs>) -> Vec<String> {
    let mut declared = Vec::new();
    if let Some(caps) = live.and_then(|l| l.client_capabilities.as_deref()) {
        declared = vec!["--client-capabilities".to_string(), shell_quote(caps)];
    }
    let mut args = source_args_plain(source);
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, declared);
    args
}

fn source_args_plain(source: &Source<'_>) -> Vec<String> {
    match source {
        Source::Files(paths) => paths
            .iter()
            .flat_map(|p| ["--from".to_string(), shell_quote(p)])
            .collect(),
        Source::Stdio(spec) => {
            let mut out = vec!["--".to_string(), shell_quote(&spec.command)];
            out.extend(spec.args.iter().map(|a| shell_quote(a)));
            out
        }
        // Header values are secrets: the command names the headers, never their values.
        Source::Http(spec) => {
            let mut out = vec![
                "--url".to_string(),
                shell_quote(&crate::live::http::redact_url(&spec.url)),
            ];
            for (name, _) in &spec.headers {
                out.push("--header".to_string());
                out.push(shell_quote(&format!("{name}: …")));
            }
            out
        }
    }
}

/// A server from a config file, ready to start.
struct Planned<'c> {
    written: &'c crate::config::ConfiguredServer,
    source: Source<'static>,
}

/// The config `lock` and `check` use when given no source: `--mcp-config`, `catalock.toml`,
/// or a detected MCP client config.
fn load_config(live: &LiveArgs) -> Result<Option<crate::config::LoadedConfig>, Error> {
    match &live.mcp_config {
        Some(path) if path.extension().is_some_and(|e| e == "toml") => {
            crate::config::load_catalock_toml(path).map(Some)
        }
        Some(path) => crate::config::load_mcp_config(path).map(Some),
        None => crate::config::discover_config(Path::new(".")),
    }
}

fn plan<'c>(
    config: &'c crate::config::LoadedConfig,
    only: Option<&str>,
) -> Result<Vec<Planned<'c>>, Error> {
    let label = config.path.display().to_string();
    let chosen: Vec<&crate::config::ConfiguredServer> = config
        .servers
        .iter()
        .filter(|s| only.is_none_or(|n| s.name == n))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::usage(
            match only {
                Some(name) => format!(
                    "{label} has no server `{name}` (it has: {})",
                    names.join(", ")
                ),
                None => format!("{label} names no servers"),
            },
            format!("add a [[server]] to {label}, or pass a source (--from, -- COMMAND, --url)"),
        ));
    }
    let mut out = Vec::new();
    for written in chosen {
        let name = &written.name;
        let source = match (&written.command, &written.url) {
            (Some(command), _) => {
                let env = written
                    .env
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), crate::config::expand(v, name)?)))
                    .collect::<Result<Vec<_>, Error>>()?;
                Source::Stdio(crate::live::stdio::StdioSpec {
                    command: crate::config::expand(command, name)?,
                    args: written
                        .args
                        .iter()
                        .map(|a| crate::config::expand(a, name))
                        .collect::<Result<_, _>>()?,
                    env,
                    cwd: written
                        .cwd
                        .as_deref()
                        .map(|c| crate::config::expand(c, name))
                        .transpose()?
                        .map(std::path::PathBuf::from),
                    label: name.clone(),
                })
            }
            (None, Some(url)) => Source::Http(crate::live::http::HttpSpec {
                url: crate::config::expand(url, name)?,
                headers: written
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), crate::config::expand(v, name)?)))
                    .collect::<Result<_, Error>>()?,
                label: name.clone(),
            }),
            (None, None) => unreachable!("validated when loaded"),
        };
        out.push(Planned { written, source });
    }
    Ok(out)
}

/// The identity a configured server is asked with: what its entry recorded, else the
/// config's `client-capabilities`, else the default.
fn planned_identity(
    plan: &Planned<'_>,
    entry: Option<&LockedServer>,
    live: &LiveArgs,
) -> Result<crate::live::ClientIdentity, Error> {
    let mut client = client_identity(live, entry)?;
    if entry.is_none_or(|e| e.client_capabilities.is_none())
        && let Some(table) = &plan.written.client_capabilities
    {
        client.capabilities = serde_json::to_value(table)
            .map_err(|e| Error::usage(format!("client-capabilities: {e}"), "fix catalock.toml"))?;
    }
    Ok(client)
}

/// Runs `work` over `items` with at most `jobs` at once, results in input order.
fn bounded<T: Sync, R: Send>(items: &[T], jobs: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<R>>> =
        std::sync::Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = work(item);
                    results.lock().expect("results")[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// One error for several failed servers: each named with its cause.
fn combined_error(failures: Vec<(String, Error)>) -> Error {
    if failures.len() == 1 {
        let (name, e) = failures.into_iter().next().expect("one");
        return Error::new(e.kind, format!("server `{name}`: {}", e.message), e.hint);
    }
    let kind = failures[0].1.kind;
    let names: Vec<String> = failures
        .iter()
        .map(|(n, e)| format!("`{n}` ({})", e.message))
        .collect();
    Error::new(
        kind,
        format!("{} servers failed: {}", failures.len(), names.join("; ")),
        "fix them, or handle the others with --name NAME; the lockfile is unchanged",
    )
}

/// `lock` with no source: every configured server, in parallel, into one lockfile write.
fn lock_all(
    args: &LockArgs,
    config: &crate::config::LoadedConfig,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let plans = plan(config, args.name.as_deref())?;
    let path = Path::new(&args.lockfile);
    let locked = |name: &str| read_lockfile(path).is_ok_and(|r| r.lockfile.server(name).is_some());
    if let Some(new) = plans.iter().find(|p| !locked(&p.written.name)) {
        warm_tokenizer(&new.source);
    }
    let existing = if path.exists() {
        Some(read_trusted(&args.lockfile)?.0)
    } else {
        None
    };
    let entry_of = |name: &str| existing.as_ref().and_then(|r| r.lockfile.server(name));
    let progress = Progress::new(plans.len());
    let captures = bounded(&plans, args.live.jobs, |plan| {
        // lock asks with the configured identity (not a stale recorded one).
        let client = planned_identity(plan, None, &args.live)?;
        let capture = acquire_as(
            &plan.source,
            &args.live,
            &client,
            Some(plan.written),
            plan.written.protocol.as_deref(),
        );
        progress.done(&plan.written.name);
        capture
    });
    progress.finish();
    let mut failures = Vec::new();
    let mut lockfile = existing
        .as_ref()
        .map(|r| r.lockfile.clone())
        .unwrap_or_default();
    let mut lines = String::new();
    for (plan, capture) in plans.iter().zip(captures) {
        let capture = match capture {
            Ok(c) => c,
            Err(e) => {
                failures.push((plan.written.name.clone(), e));
                continue;
            }
        };
        let previous = entry_of(&plan.written.name);
        let options = BuildOptions {
            name: plan.written.name.clone(),
            source: capture.describe(),
            previous,
            detail: Detail::Full,
        };
        match build_server(&capture, &options) {
            Ok(server) => {
                let status = match previous {
                    Some(old) if same_entry(old, &server) => "unchanged",
                    Some(_) => "updated",
                    None => "added",
                };
                lines.push_str(&format!(
                    "{status} server `{}`: {} tools, {} tokens, {}\n",
                    server.name,
                    server.tool_count,
                    server.total_tokens,
                    server.server_digest.short()
                ));
                for note in &capture.notes {
                    lines.push_str(&format!("note: {note}\n"));
                }
                lockfile.upsert(server);
            }
            Err(e) => failures.push((plan.written.name.clone(), e)),
        }
    }
    if !failures.is_empty() {
        return Err(combined_error(failures));
    }
    let current = existing
        .as_ref()
        .is_some_and(|r| r.lockfile.to_toml() == lockfile.to_toml() && r.canonical);
    if !current {
        lockfile.write_atomic(path)?;
    }
    lines.push_str(&format!(
        "{} servers from {} ({})\n",
        plans.len(),
        config.path.display(),
        if current {
            format!("{} already current", args.lockfile)
        } else {
            format!("wrote {}", args.lockfile)
        }
    ));
    write_output(out, &lines)?;
    Ok(EXIT_SAME)
}

/// `check` with no source: every configured server against its entry.
fn check_all(
    args: &CheckArgs,
    config: &crate::config::LoadedConfig,
    governance: &crate::config::Governance,
) -> Result<Report, Error> {
    let plans = plan(config, args.name.as_deref())?;
    let (read, findings) = crate::verify::read_verified_digests(Path::new(&args.lockfile))?;
    let mut notes = trust(&args.lockfile, findings)?;
    let mut unlocked = Vec::new();
    for plan in &plans {
        if read.lockfile.server(&plan.written.name).is_none() {
            unlocked.push(plan.written.name.clone());
        }
    }
    if !unlocked.is_empty() {
        return Err(Error::usage(
            format!(
                "{} has no entry for {}",
                args.lockfile,
                unlocked
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "lock it first: catalock lock --name {}",
                shell_quote(&unlocked[0])
            ),
        ));
    }
    let results = bounded(&plans, args.live.jobs, |plan| {
        let entry = read.lockfile.server(&plan.written.name);
        let client = planned_identity(plan, entry, &args.live)?;
        let capture = acquire_as(
            &plan.source,
            &args.live,
            &client,
            Some(plan.written),
            plan.written.protocol.as_deref(),
        )?;
        let options = BuildOptions {
            name: plan.written.name.clone(),
            source: capture.describe(),
            previous: None,
            detail: Detail::Skeleton,
        };
        let skeleton = build_server(&capture, &options)?;
        Ok::<_, Error>((capture, skeleton))
    });
    let mut failures = Vec::new();
    let mut full: Option<ReadLockFile> = None;
    let mut report = Report::new("check", Outcome::Match);
    let mut changed_names = Vec::new();
    for (plan, result) in plans.iter().zip(results) {
        let name = &plan.written.name;
        let (capture, skeleton) = match result {
            Ok(r) => r,
            Err(e) => {
                failures.push((name.clone(), e));
                continue;
            }
        };
        let entry = read.lockfile.server(name).expect("checked above");
        notes.extend(capture.notes.iter().map(|n| format!("`{name}`: {n}")));
        let mut server_diff = diff_servers(entry, &skeleton);
        if server_diff.is_change() {
            if full.is_none() {
                full = Some(read_lockfile(Path::new(&args.lockfile))?);
            }
            let entry = full
                .as_ref()
                .expect("read")
                .lockfile
                .server(name)
                .expect("same file");
            server_diff = full_drift_diff(entry, &capture, governance)?;
            changed_names.push(name.clone());
        } else if version_drift(entry, &skeleton, &mut server_diff) {
            changed_names.push(name.clone());
        }
        if server_diff.is_change()
            || !server_diff.notes.is_empty()
            || !server_diff.coverage.is_empty()
        {
            report.servers.push(server_diff);
        }
    }
    if !failures.is_empty() {
        return Err(combined_error(failures));
    }
    if !changed_names.is_empty() {
        report.set_outcome(Outcome::Changed);
        let mut accept = vec!["catalock".to_string(), "lock".to_string()];
        if let Some(path) = &args.live.mcp_config {
            accept.push("--mcp-config".to_string());
            accept.push(shell_quote(&path.display().to_string()));
        }
        if changed_names.len() == 1 {
            accept.push("--name".to_string());
            accept.push(shell_quote(&changed_names[0]));
        }
        if args.lockfile != crate::cli::DEFAULT_LOCKFILE {
            accept.push("--lockfile".to_string());
            accept.push(shell_quote(&args.lockfile));
        }
        report.accept = Some(accept.join(" "));
    }
    report.notes = notes;
    Ok(report)
}

/// Whether a command line names no source, so the config decides.
fn no_source(from: &[String], live: &LiveArgs) -> bool {
    from.is_empty() && live.command.is_empty() && live.url.is_none()
}

/// Builds the tokenizer's tables (tens of milliseconds) on another thread while a live
/// server starts and answers, so a first lock does not wait for them afterwards.
fn warm_tokenizer(source: &Source<'_>) {
    if !matches!(source, Source::Files(_)) {
        std::thread::spawn(|| crate::tokens::count(""));
    }
}

fn explain(args: &crate::cli::ExplainArgs, out: &mut dyn Write) -> Result<u8, Error> {
    if args.list {
        let mut text = String::new();
        for code in crate::codes::CODES {
            text.push_str(&format!(
                "{:<30} {:<9} {}\n",
                code.name,
                code.severity.name(),
                code.summary
            ));
        }
        write_output(out, &text)?;
        return Ok(EXIT_SAME);
    }
    let name = args.code.as_deref().unwrap_or("");
    let code = crate::codes::code(name).ok_or_else(|| {
        let close = crate::codes::similar(name);
        Error::usage(
            format!(
                "no change code {name:?}{}",
                if close.is_empty() {
                    String::new()
                } else {
                    format!(" (did you mean {}?)", close.join(", "))
                }
            ),
            "catalock explain --list",
        )
    })?;
    write_output(
        out,
        &format!(
            "{} ({})\n{}.\n\n{}\n",
            code.name,
            code.severity.name(),
            code.summary,
            code.explanation
        ),
    )?;
    Ok(EXIT_SAME)
}

/// Splits `SERVER/SUBJECT` (the subject may itself contain `/`, as URI templates do).
fn split_target(target: &str) -> (&str, Option<&str>) {
    match target.split_once('/') {
        Some((server, subject)) if !subject.is_empty() => (server, Some(subject)),
        Some((server, _)) => (server, None),
        None => (target, None),
    }
}

fn who(by: Option<&String>) -> Result<String, Error> {
    if let Some(by) = by {
        return Ok(by.clone());
    }
    crate::git::identity(Path::new(".")).ok_or_else(|| {
        Error::usage(
            "no --by given and git has no user.name configured",
            "pass --by 'Your Name', or run: git config user.name 'Your Name'",
        )
    })
}

fn approve(args: &crate::cli::ApproveArgs, out: &mut dyn Write) -> Result<u8, Error> {
    // Reports show invisible characters as <U+XXXX>; a target copied from one still matches.
    let target = crate::classify::unvisible(&args.target);
    let (server, subject) = split_target(&target);
    if subject.is_none() && !args.all {
        return Err(Error::usage(
            format!(
                "say what to approve: {server}/TOOL, or {server} --all for every pending change"
            ),
            "catalock check --base origin/main lists each change with its approve command"
                .to_string(),
        ));
    }
    if args.reason.trim().is_empty() {
        return Err(Error::usage(
            "--reason is empty: an approval records why",
            "pass --reason 'why this change is fine'",
        ));
    }
    let base = args
        .base
        .chosen()
        .unwrap_or_else(|| crate::review::Base::Revision(default_base()));
    let by = who(args.by.as_ref())?;
    let governance = crate::config::load_governance(Path::new(&args.config))?;
    let (base_lockfile, label) = crate::review::read_base(&base, &args.lockfile)?;
    let (work, _) = read_trusted(&args.lockfile)?;
    let (governance, _) = crate::review::governance_for_review(governance, &base, &args.config)?;
    if work.lockfile.server(server).is_none() && base_lockfile.server(server).is_none() {
        let names: Vec<&str> = work
            .lockfile
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        return Err(Error::usage(
            format!(
                "neither {} nor {label} has a server `{server}` (it has: {})",
                args.lockfile,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
            format!(
                "catalock check {} lists each change with its approve command",
                base.args()
            ),
        ));
    }
    let review = crate::review::review(&base_lockfile, &work.lockfile, &governance, &label, "");
    let pending = crate::review::pending_approvals(&review, server, subject);
    if pending.is_empty() && args.all && review.servers.iter().any(|s| s.server == server) {
        write_output(
            out,
            &format!("nothing of `{server}` needs approval since {label}\n"),
        )?;
        return Ok(EXIT_SAME);
    }
    if pending.is_empty() {
        let changed = review
            .servers
            .iter()
            .find(|s| s.server == server)
            .is_some_and(|s| {
                s.changes
                    .iter()
                    .any(|c| subject.is_none_or(|sub| sub == c.subject))
            });
        let what = subject.map_or(format!("`{server}`"), |s| format!("`{server}/{s}`"));
        return Err(Error::usage(
            if changed {
                format!(
                    "nothing of {what} needs approval since {label} (its changes are allowed, denied or already approved)"
                )
            } else {
                format!("{what} has no changes since {label}")
            },
            format!("catalock check {} lists what needs approval", base.args()),
        ));
    }
    crate::review::record_approvals(Path::new(&args.config), &pending, &by, &args.reason)?;
    let mut text = String::new();
    for approval in &pending {
        text.push_str(&format!(
            "approved {}/{}: {} -> {} ({})\n",
            approval.server,
            crate::classify::visible(&approval.subject),
            approval
                .from
                .as_deref()
                .map_or("(none)".to_string(), short_digest),
            approval
                .to
                .as_deref()
                .map_or("(none)".to_string(), short_digest),
            approval.codes.join(", ")
        ));
    }
    text.push_str(&format!(
        "recorded {} approval{} in {} by {by}\n",
        pending.len(),
        if pending.len() == 1 { "" } else { "s" },
        args.config
    ));
    write_output(out, &text)?;
    Ok(EXIT_SAME)
}

fn short_digest(digest: &str) -> String {
    digest.chars().take(19).collect()
}

/// The base `approve` compares with when none is given: the upstream of a pull request.
fn default_base() -> String {
    std::env::var("GITHUB_BASE_REF")
        .ok()
        .filter(|b| !b.is_empty())
        .map(|b| format!("origin/{b}"))
        .unwrap_or_else(|| "origin/main".to_string())
}

fn deprecate(args: &crate::cli::DeprecateArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let (server, tool) = split_target(&args.target);
    let Some(tool) = tool else {
        return Err(Error::usage(
            format!("say which tool: {server}/TOOL"),
            format!("catalock deprecate {server}/TOOL --remove-after YYYY-MM-DD"),
        ));
    };
    let today = crate::policy::today();
    if crate::policy::is_date(&args.remove_after) && args.remove_after <= today {
        return Err(Error::usage(
            format!(
                "--remove-after {} is not after today ({today}): a deprecation gives callers notice",
                args.remove_after
            ),
            format!(
                "catalock deprecate {} --remove-after YYYY-MM-DD with a date after {today}",
                shell_quote(&args.target)
            ),
        ));
    }
    if !crate::policy::is_date(&args.remove_after) {
        return Err(Error::usage(
            format!(
                "--remove-after {:?} is not a date (YYYY-MM-DD)",
                args.remove_after
            ),
            format!(
                "catalock deprecate {} --remove-after 2027-01-31",
                shell_quote(&args.target)
            ),
        ));
    }
    let (work, _) = read_trusted(&args.lockfile)?;
    let entry = work
        .lockfile
        .server(server)
        .ok_or_else(|| no_entry(&work.lockfile, server, &args.lockfile))?;
    if !entry.tools.iter().any(|t| t.name == tool) {
        return Err(Error::usage(
            format!(
                "server `{server}` in {} has no tool `{tool}`",
                args.lockfile
            ),
            format!(
                "catalock deprecate {server}/TOOL with one of its {} tools",
                entry.tools.len()
            ),
        ));
    }
    let by = who(args.by.as_ref())?;
    crate::review::record_deprecation(
        Path::new(&args.config),
        server,
        tool,
        &args.remove_after,
        args.reason.as_deref(),
        &by,
    )?;
    write_output(
        out,
        &format!(
            "deprecated {server}/{tool}: removing it after {} is safe (recorded in {})\n",
            args.remove_after, args.config
        ),
    )?;
    Ok(EXIT_SAME)
}

fn show(args: &crate::cli::ShowArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let (read, _) = read_trusted(&args.lockfile)?;
    let (server, tool) = match args.target.as_deref() {
        Some(target) => {
            let (server, tool) = split_target(target);
            (Some(server), tool)
        }
        None => (None, None),
    };
    if let Some(name) = server
        && read.lockfile.server(name).is_none()
    {
        return Err(no_entry(&read.lockfile, name, &args.lockfile));
    }
    let text = crate::render::show(&read.lockfile, server, tool, &args.format)
        .map_err(|what| Error::usage(what, format!("catalock show {}", server.unwrap_or(""))))?;
    let text = if args.format == "json" {
        text
    } else {
        crate::report::defuse_workflow_commands(&text)
    };
    write_output(out, &text)?;
    Ok(EXIT_SAME)
}

fn digest(args: &crate::cli::DigestArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let (read, _) = read_trusted(&args.lockfile)?;
    let servers: Vec<&LockedServer> = match args.server.as_deref() {
        Some(name) => vec![
            read.lockfile
                .server(name)
                .ok_or_else(|| no_entry(&read.lockfile, name, &args.lockfile))?,
        ],
        None => read.lockfile.servers.iter().collect(),
    };
    let text = if args.server_json {
        let [server] = servers.as_slice() else {
            return Err(Error::usage(
                format!(
                    "{} locks {} servers; --server-json describes one",
                    args.lockfile,
                    servers.len()
                ),
                "catalock digest SERVER --server-json",
            ));
        };
        let meta = serde_json::json!({
            "_meta": {
                "io.catalock/digest": {
                    "algorithm": read.lockfile.digest_algorithm,
                    "server-digest": server.server_digest.to_string(),
                    "catalog-revision": server.catalog_revision.to_string(),
                    "tools": server.tool_count,
                }
            }
        });
        let mut text = serde_json::to_string_pretty(&meta).expect("JSON serializes");
        text.push('\n');
        text
    } else {
        servers
            .iter()
            .map(|s| {
                format!(
                    "{}  {}  ({} tools, {} tokens)\n",
                    s.server_digest, s.name, s.tool_count, s.total_tokens
                )
            })
            .collect()
    };
    write_output(out, &text)?;
    Ok(EXIT_SAME)
}

/// A one-line progress count on stderr while several servers are asked, only when stderr is
/// a terminal (CI logs and pipes get nothing).
struct Progress {
    total: usize,
    done: std::sync::atomic::AtomicUsize,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total,
            done: std::sync::atomic::AtomicUsize::new(0),
            shown: total > 1 && std::io::stderr().is_terminal(),
        }
    }

    fn done(&self, name: &str) {
        let n = self.done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if self.shown {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(
                stderr,
                "\r\x1b[2Klocked {n}/{} servers ({name})",
                self.total
            );
            let _ = stderr.flush();
        }
    }

    fn finish(&self) {
        if self.shown {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

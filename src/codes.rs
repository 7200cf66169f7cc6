//! The change codes: stable names for every kind of contract change, each with a default
//! severity and an explanation (`catalock explain CODE`). Names are part of the public
//! contract (policies and approvals refer to them): add codes, never rename one.

use serde::Serialize;

/// How much a change matters, most severe first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Callers or agents break.
    Breaking,
    /// Agent behaviour or safety may change.
    Risky,
    /// Additive: nothing that worked stops working.
    Safe,
    /// No observable effect.
    Cosmetic,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Breaking => "breaking",
            Severity::Risky => "risky",
            Severity::Safe => "safe",
            Severity::Cosmetic => "cosmetic",
        }
    }
}

/// One change code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    pub name: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($name:literal, $severity:ident, $summary:literal, $explanation:literal;)*) => {
        /// Every code, in the order `catalock explain --list` shows them.
        pub const CODES: &[Code] = &[$(Code { name: $name, severity: Severity::$severity, summary: $summary, explanation: $explanation }),*];
    };
}

codes! {
    "tool-removed", Breaking, "a tool is gone",
        "A tool the lockfile lists is no longer offered. Agents and callers that use it fail. \
         Removing a tool that was deprecated (catalock deprecate) after its removal date is \
         `deprecated-tool-removed` instead.";
    "deprecated-tool-removed", Safe, "a deprecated tool was removed after its removal date",
        "The tool was deprecated with `catalock deprecate SERVER/TOOL --remove-after DATE` and \
         that date has passed: callers had their notice.";
    "tool-added", Safe, "a new tool",
        "The server offers a tool the lockfile does not list. Nothing that worked breaks, but agents \
         will see and may call it: review its description and permissions.";
    "tool-renamed", Breaking, "a tool has a new name and is otherwise the same",
        "A removed and an added tool have the same digest for everything but the name. Callers that \
         use the old name fail.";
    "title-changed", Cosmetic, "the display title changed",
        "`title` (or `annotations.title`) is shown to people, not used by callers.";
    "description-changed", Risky, "the description a model reads changed",
        "Models choose and use tools by their description: a changed description changes agent \
         behaviour, and is where prompt injection hides.";
    "input-property-removed", Breaking, "an input property is gone",
        "Callers that send the property are rejected or have it ignored.";
    "input-required-added", Breaking, "an input property became required",
        "Callers that do not send it are rejected.";
    "input-required-removed", Safe, "a required input property became optional",
        "Existing calls stay valid.";
    "input-optional-added", Safe, "a new optional input property",
        "Existing calls stay valid.";
    "input-type-narrowed", Breaking, "an input accepts fewer types",
        "Callers sending a type no longer accepted are rejected (also: an anyOf/oneOf branch removed).";
    "input-type-widened", Safe, "an input accepts more types",
        "Existing calls stay valid (also: an anyOf/oneOf branch added).";
    "input-enum-value-removed", Breaking, "an input enum lost a value",
        "Callers sending that value are rejected.";
    "input-enum-value-added", Safe, "an input enum gained a value",
        "Existing calls stay valid.";
    "input-constraint-tightened", Breaking, "an input constraint got stricter",
        "A minimum, maximum, length, item count, pattern, format, const or allOf branch now \
         rejects values it accepted (a changed pattern or format counts as stricter: catalock \
         cannot prove otherwise).";
    "input-constraint-loosened", Safe, "an input constraint got looser",
        "Existing calls stay valid.";
    "additional-properties-closed", Breaking, "an input object no longer accepts extra properties",
        "Callers sending properties not in the schema are rejected.";
    "additional-properties-opened", Safe, "an input object now accepts extra properties",
        "Existing calls stay valid.";
    "output-schema-added", Safe, "the tool now declares an output schema",
        "Structured output is described where it was not.";
    "output-schema-removed", Breaking, "the tool no longer declares an output schema",
        "Callers relying on validated structured output lose it.";
    "output-property-removed", Breaking, "an output property is gone",
        "Callers reading it get nothing.";
    "output-property-added", Safe, "a new output property",
        "Callers that do not know it ignore it.";
    "output-required-removed", Breaking, "an output property may now be absent",
        "Callers that rely on it being present may fail.";
    "output-type-changed", Breaking, "an output value may have another type or value",
        "Output widening is breaking: a type added or changed, an enum value added, a constraint \
         loosened or extra properties allowed mean callers may receive what they cannot parse.";
    "output-type-narrowed", Safe, "an output value has fewer possible types or values",
        "Output narrowing is safe: callers receive a subset of what they handled before.";
    "schema-doc-changed", Risky, "a description, title, default or example inside a schema changed",
        "Models read property descriptions and defaults to fill arguments: their calls may change.";
    "schema-reordered", Cosmetic, "list order in a schema changed where order has no meaning",
        "`required`, `enum`, a `type` array or `anyOf`/`oneOf` branches were reordered: every \
         value accepted before is accepted now, and nothing else.";
    "coverage-reduced", Risky, "the lockfile no longer records part of the server",
        "Instructions, prompts or resource templates were locked before and are not now (the new \
         lock was made from a capture without them): they are no longer guarded. Lock from a \
         source that includes them, or approve the reduction.";
    "schema-changed", Risky, "a schema changed in a way catalock does not classify",
        "A keyword without a rule (`not`, `if`/`then`/`else`, a vendor keyword) or a `$ref` \
         catalock does not follow (it never fetches a network URI) changed. Review it by hand.";
    "permission-escalated", Risky, "a safety hint moved toward danger",
        "readOnlyHint true to false, destructiveHint false to true, openWorldHint false to true, or \
         idempotentHint true to false: clients that auto-approve by these hints will now let the tool \
         do more without asking.";
    "permission-relaxed", Safe, "a safety hint moved toward safety",
        "The server now claims the tool is safer. Hints are untrusted: verify before relying on them.";
    "execution-changed", Risky, "how the tool runs changed",
        "`execution` (task support) changed: clients may call it differently.";
    "meta-changed", Risky, "`_meta` changed",
        "Extensions read `_meta` (UI resources, vendor data): their behaviour may change.";
    "icons-changed", Cosmetic, "the icons changed",
        "Icons are shown to people only.";
    "behavior-changed", Risky, "another top-level or annotation key changed",
        "A key catalock has no specific rule for changed (an unknown key, a vendor annotation).";
    "tokens-grew", Risky, "the tool (or server) costs many more tokens",
        "A tool's definition grew by more than 25% and more than 100 tokens, or a server's tools \
         passed its token budget (both configurable in catalock.toml [policy.tokens]): every \
         conversation that lists them pays for that.";
    "hidden-unicode", Risky, "invisible or deceptive characters were added",
        "Zero-width, bidirectional-control, tag or other invisible characters appeared in text a \
         model or person reads: a classic way to hide instructions. They are shown as <U+XXXX>.";
    "instructions-changed", Risky, "the server instructions changed",
        "Instructions go into the model's context for every conversation.";
    "prompt-added", Safe, "a new prompt", "The server offers a prompt the lockfile does not list.";
    "prompt-removed", Breaking, "a prompt is gone", "Users and clients that use it fail.";
    "prompt-argument-required", Breaking, "a prompt argument became required",
        "A required argument was added to a prompt, or an optional one became required: clients \
         that do not send it fail.";
    "prompt-changed", Risky, "a prompt changed", "Its arguments or text changed.";
    "resource-template-added", Safe, "a new resource template", "Additive.";
    "resource-template-removed", Breaking, "a resource template is gone", "Clients that read it fail.";
    "resource-template-changed", Risky, "a resource template changed", "Its URI template or description changed.";
    "server-added", Safe, "a new server entry", "The lockfile gained a server.";
    "server-removed", Breaking, "a server entry is gone",
        "The lockfile no longer lists the server: its contract is no longer guarded.";
    "version-not-bumped", Risky, "the contract changed but serverInfo.version did not",
        "Published versions are immutable: two different contracts under one version make the \
         version useless to clients that pin or cache by it.";
    "semver-violation", Breaking, "a breaking change without a major version bump",
        "Under semver a breaking change needs a new major version (a new minor for 0.x versions).";
    "version-invalid", Risky, "serverInfo.version looks like a range, not a version",
        "`^1.2.3`, `~1.2.3`, `1.x`, `1.2.*` and the like describe sets of versions: a server \
         publishes exactly one.";
    "version-backwards", Risky, "serverInfo.version went backwards",
        "The new version is lower than the locked one (semver order, or the order versions were \
         locked in for versions that are not semver).";
    "owner-missing", Risky, "the server has no owner in catalock.toml",
        "A contract nobody owns is never reviewed: give the [[server]] an `owner` (team or person).";
}

/// The codes closest to a misspelt `name` (at most three edits away, or containing it).
pub fn similar(name: &str) -> Vec<&'static str> {
    CODES
        .iter()
        .map(|c| c.name)
        .filter(|c| edit_distance(c, name) <= 3 || (name.len() > 3 && c.contains(name)))
        .collect()
}

/// Levenshtein distance over bytes (code names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if x == y {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

/// The code named `name`.
pub fn code(name: &str) -> Option<&'static Code> {
    CODES.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case() {
        let mut names: Vec<&str> = CODES.iter().map(|c| c.name).collect();
        assert!(
            names
                .iter()
                .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')),
            "{names:?}"
        );
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "duplicate code names");
        assert_eq!(
            code("tool-removed").map(|c| c.severity),
            Some(Severity::Breaking)
        );
        assert_eq!(similar("descripton-changed"), ["description-changed"]);
        assert_eq!(
            similar("tool-remove"),
            ["tool-removed", "deprecated-tool-removed"]
        );
        assert!(similar("zzz").is_empty());
    }
}

//! Semantic diff of two JSON Schemas of one tool (its `inputSchema` or its `outputSchema`).
//!
//! [`diff_schemas`] walks both schemas side by side and names each change with a stable change
//! code (see [`crate::codes`]) and an RFC 6901 pointer. Every rule first classifies a change by
//! what it does to the set of values the schema accepts (narrowed, widened, a property removed,
//! ...); [`Direction`] then maps that to a code. Variance: callers *write* a tool's input, so an
//! input schema that accepts less breaks them and one that accepts more is safe; callers *read*
//! its output, so the polarity flips (output that may take more shapes is what breaks them).
//!
//! Local `$ref`s are resolved against each side's own root (old refs in the old schema, new refs
//! in the new one) under a cycle guard; nothing is ever fetched. Documentation keywords (`title`,
//! `description`, `$comment`, ...) are reported as `schema-doc-changed`: models read the whole
//! schema, comments included. A list whose order carries no meaning (`required`, `enum`, a `type`
//! array, `anyOf`/`oneOf` branches) that was only reordered is the cosmetic `schema-reordered`.
//! What has no rule is reported as `schema-changed`, and a final safety net guarantees that two
//! schemas that differ never diff as empty.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

use serde_json::{Map, Number, Value};

/// Which side of a tool a schema describes: decides whether narrowing or widening breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `inputSchema`: callers write these values, so narrowing breaks them.
    Input,
    /// `outputSchema`: callers read these values, so widening breaks them.
    Output,
}

/// One semantic change between two schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    /// A change code name (see [`crate::codes`]).
    pub code: &'static str,
    /// JSON Pointer into the NEW schema (into the old one for things that were removed),
    /// relative to the schema root.
    pub pointer: String,
    /// One short human phrase, e.g. `type "string" -> ["string","null"]`,
    /// `property "path" removed`, `enum value "fast" removed`, `maxLength 100 -> 50`.
    pub detail: String,
}

/// The changes from `old` to `new`, in walk order (fixed keyword order within a node, property
/// names sorted), without duplicates. Never empty when the schemas differ other than in object
/// key order.
pub fn diff_schemas(old: &Value, new: &Value, direction: Direction) -> Vec<SchemaChange> {
    if old == new {
        return Vec::new();
    }
    let mut walk = Walk::new(old, new, direction);
    walk.node(old, new, "");
    let mut changes = walk.changes;
    // Safety net: a difference no rule classified (`1` against `1.0`, a renamed `$defs` entry
    // with the same content, ...) must still surface. Only when nothing at all was reported: a
    // reorder reported as `schema-reordered` is not reported again.
    if changes.is_empty() {
        changes.push(SchemaChange {
            code: Kind::Other.code(direction),
            pointer: String::new(),
            detail: "schema changed".to_owned(),
        });
    }
    changes
}

/// What a change does to the accepted values, before [`Direction`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PropertyRemoved,
    OptionalPropertyAdded,
    RequiredPropertyAdded,
    /// An existing property (or a name) became required.
    RequiredAdded,
    RequiredRemoved,
    TypeNarrowed,
    TypeWidened,
    /// Types both lost and gained.
    TypeChanged,
    EnumValueRemoved,
    EnumValueAdded,
    /// Also: `enum`, `anyOf` or `oneOf` introduced.
    Tightened,
    /// Also: `enum`, `anyOf` or `oneOf` dropped.
    Loosened,
    Closed,
    Opened,
    Doc,
    /// A list whose order has no meaning was reordered, and nothing else.
    Reordered,
    Other,
}

impl Kind {
    fn code(self, direction: Direction) -> &'static str {
        use Direction::{Input, Output};
        use Kind::*;
        match (self, direction) {
            (PropertyRemoved, Input) => "input-property-removed",
            (PropertyRemoved, Output) => "output-property-removed",
            (OptionalPropertyAdded, Input) => "input-optional-added",
            (OptionalPropertyAdded | RequiredPropertyAdded, Output) => "output-property-added",
            (RequiredPropertyAdded | RequiredAdded, Input) => "input-required-added",
            (RequiredRemoved, Input) => "input-required-removed",
            (RequiredRemoved, Output) => "output-required-removed",
            // A type both lost and gained is breaking for input: report it as the narrowing.
            (TypeNarrowed | TypeChanged, Input) => "input-type-narrowed",
            (TypeWidened, Input) => "input-type-widened",
            (EnumValueRemoved, Input) => "input-enum-value-removed",
            (EnumValueAdded, Input) => "input-enum-value-added",
            (Tightened, Input) => "input-constraint-tightened",
            (Loosened, Input) => "input-constraint-loosened",
            (Closed, Input) => "additional-properties-closed",
            (Opened, Input) => "additional-properties-opened",
            (RequiredAdded | TypeNarrowed | EnumValueRemoved | Tightened | Closed, Output) => {
                "output-type-narrowed"
            }
            (TypeWidened | TypeChanged | EnumValueAdded | Loosened | Opened, Output) => {
                "output-type-changed"
            }
            (Doc, _) => "schema-doc-changed",
            (Reordered, _) => "schema-reordered",
            (Other, _) => "schema-changed",
        }
    }
}

/// How a keyword is compared.
#[derive(Debug, Clone, Copy)]
enum Rule {
    Type,
    Enum,
    /// A lower bound: raised or added is tighter.
    Lower,
    /// An upper bound: lowered or added is tighter.
    Upper,
    MultipleOf,
    /// Added or changed is tighter, removed is looser.
    Tighten,
    UniqueItems,
    Items,
    /// `prefixItems` (and the draft-4 array form of `items`).
    Tuple,
    Contains,
    Properties,
    Required,
    /// `additionalProperties` / `unevaluatedProperties`.
    Extra,
    PatternProperties,
    AllOf,
    /// `anyOf` / `oneOf`.
    Branches,
    Doc,
    /// Not compared here: `$ref` is followed separately, `$defs` only through `$ref`.
    Skip,
}

/// Every keyword with a rule, in the order changes are reported within a node.
const KEYWORDS: &[(&str, Rule)] = &[
    ("type", Rule::Type),
    ("enum", Rule::Enum),
    ("const", Rule::Tighten),
    ("minimum", Rule::Lower),
    ("exclusiveMinimum", Rule::Lower),
    ("maximum", Rule::Upper),
    ("exclusiveMaximum", Rule::Upper),
    ("multipleOf", Rule::MultipleOf),
    ("minLength", Rule::Lower),
    ("maxLength", Rule::Upper),
    ("pattern", Rule::Tighten),
    ("format", Rule::Tighten),
    ("items", Rule::Items),
    ("prefixItems", Rule::Tuple),
    ("contains", Rule::Contains),
    ("minItems", Rule::Lower),
    ("maxItems", Rule::Upper),
    ("uniqueItems", Rule::UniqueItems),
    ("minContains", Rule::Lower),
    ("maxContains", Rule::Upper),
    ("properties", Rule::Properties),
    ("required", Rule::Required),
    ("additionalProperties", Rule::Extra),
    ("patternProperties", Rule::PatternProperties),
    ("unevaluatedProperties", Rule::Extra),
    ("minProperties", Rule::Lower),
    ("maxProperties", Rule::Upper),
    ("dependentRequired", Rule::Tighten),
    ("propertyNames", Rule::Tighten),
    ("allOf", Rule::AllOf),
    ("anyOf", Rule::Branches),
    ("oneOf", Rule::Branches),
    ("title", Rule::Doc),
    ("description", Rule::Doc),
    ("default", Rule::Doc),
    ("examples", Rule::Doc),
    ("deprecated", Rule::Doc),
    ("readOnly", Rule::Doc),
    ("writeOnly", Rule::Doc),
    // Models read the whole schema, comments included.
    ("$comment", Rule::Doc),
    ("$ref", Rule::Skip),
    ("$defs", Rule::Skip),
    ("definitions", Rule::Skip),
];

/// Whether `keyword` only documents (constrains no value).
fn is_doc_keyword(keyword: &str) -> bool {
    KEYWORDS
        .iter()
        .any(|(k, rule)| *k == keyword && matches!(rule, Rule::Doc))
}

/// The JSON types an absent `type` accepts (`integer` is inside `number`).
const ALL_TYPES: [&str; 6] = ["array", "boolean", "null", "number", "object", "string"];

/// Longest rendered value in a detail, in characters.
const MAX_SHOWN: usize = 60;

/// How many `$ref`s one diff follows. Changes are reported at every location that reaches
/// them, so refs that fan out (each `$defs` entry using the next twice) could make the walk
/// exponential: a hostile server must not stall a CI run.
const MAX_FOLLOWS: usize = 10_000;

/// How many `$ref`s deep the walk goes (each level recurses): a hostile chain of refs must not
/// overflow the stack. Real schemas nest far less.
const MAX_REF_DEPTH: usize = 64;

/// `true`, the schema an absent subschema keyword means.
static TRUE: Value = Value::Bool(true);
/// The keywords of `true` / `{}`.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// The state of one diff.
struct Walk<'a> {
    old_root: &'a Value,
    new_root: &'a Value,
    direction: Direction,
    changes: Vec<SchemaChange>,
    emitted: HashSet<(&'static str, String, String)>,
    /// `$ref` target pairs being compared (old, new): a repeat is a cycle. An inline side is
    /// keyed by its address.
    visiting: HashSet<(String, String)>,
    /// Local `$ref`s whose target differs between the roots (computed on first need): an
    /// equal subtree that mentions one is not unchanged.
    unstable: Option<HashSet<&'a str>>,
    follows: usize,
    /// Whether a limit stopped the walk (reported once).
    limited: bool,
}

impl<'a> Walk<'a> {
    fn new(old_root: &'a Value, new_root: &'a Value, direction: Direction) -> Self {
        // The roots are being compared: a `$ref: "#"` inside stops instead of re-walking them.
        let visiting = HashSet::from([(String::new(), String::new())]);
        Walk {
            old_root,
            new_root,
            direction,
            changes: Vec::new(),
            emitted: HashSet::new(),
            visiting,
            unstable: None,
            follows: 0,
            limited: false,
        }
    }

    fn emit(&mut self, kind: Kind, pointer: String, detail: String) {
        let code = kind.code(self.direction);
        if self.emitted.insert((code, pointer.clone(), detail.clone())) {
            self.changes.push(SchemaChange {
                code,
                pointer,
                detail,
            });
        }
    }

    /// Whether two subschemas are unchanged: equal, and not reaching a changed `$ref` target.
    fn same(&mut self, old: &Value, new: &Value) -> bool {
        if old != new {
            return false;
        }
        let (old_root, new_root) = (self.old_root, self.new_root);
        let unstable = self
            .unstable
            .get_or_insert_with(|| unstable_refs(old_root, new_root));
        unstable.is_empty() || !mentions_ref(old, unstable)
    }

    /// Compares two subschemas at `ptr`.
    fn node(&mut self, old: &Value, new: &Value, ptr: &str) {
        if self.same(old, new) {
            return;
        }
        let detail = || format!("schema {} -> {}", show(old), show(new));
        match (shape(old), shape(new)) {
            (Shape::Object(o), Shape::Object(n)) => self.object(old, new, o, n, ptr),
            (Shape::Object(_), Shape::False) => self.emit(Kind::TypeNarrowed, ptr.into(), detail()),
            (Shape::False, Shape::Object(_)) => self.emit(Kind::TypeWidened, ptr.into(), detail()),
            (Shape::False, Shape::False) => {}
            _ => self.emit(Kind::Other, ptr.into(), detail()),
        }
    }

    /// Compares two object schemas (`true` is `{}`): `$ref` first, then the other keywords.
    fn object(
        &mut self,
        old: &Value,
        new: &Value,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        ptr: &str,
    ) {
        let ref_ptr = || child(ptr, "$ref");
        match (
            classify_ref(o, self.old_root),
            classify_ref(n, self.new_root),
        ) {
            (Ref::None, Ref::None) => {}
            (Ref::Local(a, old_target), Ref::Local(b, new_target)) => {
                // 2020-12 siblings apply next to the target: compare targets, then siblings.
                self.follow((a, b), old_target, new_target, ptr);
            }
            (Ref::Local(at, target), Ref::None) => {
                // Inline on the other side: compare the whole effective schema instead.
                let merged = with_siblings(target, o);
                let old_effective = merged.as_ref().unwrap_or(target);
                self.follow((at, address(new)), old_effective, new, ptr);
                return;
            }
            (Ref::None, Ref::Local(at, target)) => {
                let merged = with_siblings(target, n);
                let new_effective = merged.as_ref().unwrap_or(target);
                self.follow((address(old), at), old, new_effective, ptr);
                return;
            }
            (Ref::Opaque(a), Ref::Opaque(b)) => {
                if a != b {
                    self.emit(Kind::Other, ref_ptr(), transition("$ref", Some(a), Some(b)));
                }
            }
            (Ref::None, _) | (_, Ref::None) => {
                // An unfollowable `$ref` against inline keywords: nothing to compare them by.
                let detail = transition("$ref", o.get("$ref"), n.get("$ref"));
                self.emit(Kind::Other, ref_ptr(), detail);
                return;
            }
            _ => {
                // One side resolves and the other does not (or is not local).
                let (a, b) = (o.get("$ref"), n.get("$ref"));
                let detail = if a == b {
                    format!("$ref {} resolves on one side only", show_opt(a))
                } else {
                    transition("$ref", a, b)
                };
                self.emit(Kind::Other, ref_ptr(), detail);
            }
        }
        self.keywords(o, n, ptr);
    }

    /// Compares two `$ref` targets under the cycle guard.
    fn follow(&mut self, key: (String, String), old: &Value, new: &Value, ptr: &str) {
        // `visiting` holds the refs being followed, plus the roots.
        if self.follows >= MAX_FOLLOWS || self.visiting.len() > MAX_REF_DEPTH {
            if !self.limited {
                // Say so rather than stay silent about what is left unwalked.
                self.limited = true;
                let detail = "$ref not followed: expansion limit reached".to_owned();
                self.emit(Kind::Other, ptr.to_owned(), detail);
            }
            return;
        }
        self.follows += 1;
        if self.visiting.insert(key.clone()) {
            self.node(old, new, ptr);
            self.visiting.remove(&key);
        }
    }

    fn keywords(&mut self, o: &Map<String, Value>, n: &Map<String, Value>, ptr: &str) {
        for &(kw, rule) in KEYWORDS {
            let (a, b) = (o.get(kw), n.get(kw));
            match (a, b) {
                (None, None) => continue,
                (Some(x), Some(y)) if self.same(x, y) => continue,
                _ => {}
            }
            match rule {
                Rule::Type => self.types(a, b, ptr),
                Rule::Enum => self.enums(a, b, ptr),
                Rule::Lower => self.bound(kw, a, b, ptr, false),
                Rule::Upper => self.bound(kw, a, b, ptr, true),
                Rule::MultipleOf => self.multiple_of(a, b, ptr),
                Rule::Tighten => {
                    let kind = match (a, b) {
                        (Some(_), None) => Kind::Loosened,
                        _ => Kind::Tightened,
                    };
                    self.emit(kind, child(ptr, kw), transition(kw, a, b));
                }
                Rule::UniqueItems => self.unique_items(a, b, ptr),
                Rule::Items => self.items(a, b, ptr),
                Rule::Tuple => self.tuple(kw, a, b, ptr),
                Rule::Contains => self.contains(a, b, ptr),
                Rule::Properties => self.properties(a, b, n, ptr),
                Rule::Required => self.required(a, b, o, n, ptr),
                Rule::Extra => self.extra(kw, a, b, ptr),
                Rule::PatternProperties => self.pattern_properties(a, b, ptr),
                Rule::AllOf => self.all_of(a, b, ptr),
                Rule::Branches => self.branches(kw, a, b, o, n, ptr),
                Rule::Doc => self.emit(Kind::Doc, child(ptr, kw), transition(kw, a, b)),
                Rule::Skip => {}
            }
        }
        // Keywords without a rule (`not`, `if`, vendor keywords, ...), sorted.
        let unknown: BTreeSet<&str> = o
            .keys()
            .chain(n.keys())
            .map(String::as_str)
            .filter(|k| !KEYWORDS.iter().any(|(kw, _)| kw == k))
            .collect();
        for kw in unknown {
            let (a, b) = (o.get(kw), n.get(kw));
            if let (Some(x), Some(y)) = (a, b)
                && self.same(x, y)
            {
                continue;
            }
            self.emit(Kind::Other, child(ptr, kw), transition(kw, a, b));
        }
    }

    fn types(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let kind = match (Types::parse(a), Types::parse(b)) {
            (Some(old), Some(new)) => {
                let lost = old.members().iter().any(|t| !new.covers(t));
                let gained = new.members().iter().any(|t| !old.covers(t));
                match (lost, gained) {
                    (true, true) => Kind::TypeChanged,
                    (true, false) => Kind::TypeNarrowed,
                    (false, true) => Kind::TypeWidened,
                    (false, false) => {
                        // The same set: a reordered array is cosmetic; spelled differently
                        // (`"number"` and `["integer","number"]`), the safety net covers it.
                        if let (Some(Value::Array(x)), Some(Value::Array(y))) = (a, b) {
                            self.reorder("type", x, y, ptr);
                        }
                        return;
                    }
                }
            }
            _ => Kind::Other,
        };
        self.emit(kind, child(ptr, "type"), transition("type", a, b));
    }

    fn enums(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        match (a, b) {
            (None, Some(_)) => self.emit(
                Kind::Tightened,
                child(ptr, "enum"),
                transition("enum", a, b),
            ),
            (Some(_), None) => {
                self.emit(Kind::Loosened, child(ptr, "enum"), transition("enum", a, b))
            }
            (Some(Value::Array(old)), Some(Value::Array(new))) => {
                for (i, value) in first_occurrences(old) {
                    if !new.contains(value) {
                        let detail = format!("enum value {} removed", show(value));
                        self.emit(Kind::EnumValueRemoved, child_index(ptr, "enum", i), detail);
                    }
                }
                for (i, value) in first_occurrences(new) {
                    if !old.contains(value) {
                        let detail = format!("enum value {} added", show(value));
                        self.emit(Kind::EnumValueAdded, child_index(ptr, "enum", i), detail);
                    }
                }
                self.reorder("enum", old, new, ptr);
            }
            _ => self.emit(Kind::Other, child(ptr, "enum"), transition("enum", a, b)),
        }
    }

    fn bound(&mut self, kw: &str, a: Option<&Value>, b: Option<&Value>, ptr: &str, upper: bool) {
        let kind = match (a, b) {
            // Draft-4 boolean exclusiveMinimum/exclusiveMaximum: `true` is the stricter bound.
            (Some(Value::Bool(_)) | None, Some(Value::Bool(_)) | None) => {
                match (a == Some(&TRUE), b == Some(&TRUE)) {
                    (false, true) => Kind::Tightened,
                    (true, false) => Kind::Loosened,
                    _ => return,
                }
            }
            (None, Some(Value::Number(_))) => Kind::Tightened,
            (Some(Value::Number(_)), None) => Kind::Loosened,
            (Some(Value::Number(x)), Some(Value::Number(y))) => match (compare(x, y), upper) {
                (Some(Ordering::Less), false) | (Some(Ordering::Greater), true) => Kind::Tightened,
                (Some(Ordering::Greater), false) | (Some(Ordering::Less), true) => Kind::Loosened,
                // Numerically equal (`1` and `1.0`): the safety net covers it.
                _ => return,
            },
            _ => Kind::Other,
        };
        self.emit(kind, child(ptr, kw), transition(kw, a, b));
    }

    fn multiple_of(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let kind = match (a, b) {
            (None, Some(Value::Number(_))) => Kind::Tightened,
            (Some(Value::Number(_)), None) => Kind::Loosened,
            (Some(Value::Number(x)), Some(Value::Number(y))) => {
                if compare(x, y) == Some(Ordering::Equal) {
                    return;
                }
                // Every multiple of 10 is a multiple of 5: a divisor of the old step is looser.
                if divides(x, y) {
                    Kind::Loosened
                } else {
                    Kind::Tightened
                }
            }
            _ => Kind::Other,
        };
        self.emit(
            kind,
            child(ptr, "multipleOf"),
            transition("multipleOf", a, b),
        );
    }

    fn unique_items(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let flag = |v: Option<&Value>| match v {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => None,
        };
        let kind = match (flag(a), flag(b)) {
            (Some(false), Some(true)) => Kind::Tightened,
            (Some(true), Some(false)) => Kind::Loosened,
            (Some(_), Some(_)) => return,
            _ => Kind::Other,
        };
        self.emit(
            kind,
            child(ptr, "uniqueItems"),
            transition("uniqueItems", a, b),
        );
    }

    fn items(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        match (a, b) {
            // The draft-4 array form is positional, like `prefixItems`.
            (Some(Value::Array(_)), _) | (_, Some(Value::Array(_))) => {
                self.tuple("items", a, b, ptr)
            }
            _ => self.node(a.unwrap_or(&TRUE), b.unwrap_or(&TRUE), &child(ptr, "items")),
        }
    }

    fn tuple(&mut self, kw: &str, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let (Some(old), Some(new)) = (as_list(a), as_list(b)) else {
            self.emit(Kind::Other, child(ptr, kw), transition(kw, a, b));
            return;
        };
        for (i, (x, y)) in old.iter().zip(new).enumerate() {
            self.node(x, y, &child_index(ptr, kw, i));
        }
        // A new leading position constrains values that were free; a dropped one frees them.
        for i in old.len()..new.len() {
            let detail = format!("{kw} entry {i} added");
            self.emit(Kind::Tightened, child_index(ptr, kw, i), detail);
        }
        for i in new.len()..old.len() {
            let detail = format!("{kw} entry {i} removed");
            self.emit(Kind::Loosened, child_index(ptr, kw, i), detail);
        }
    }

    fn contains(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let at = child(ptr, "contains");
        match (a, b) {
            (Some(x), Some(y)) => self.node(x, y, &at),
            (None, _) => self.emit(Kind::Tightened, at, transition("contains", a, b)),
            (_, None) => self.emit(Kind::Loosened, at, transition("contains", a, b)),
        }
    }

    fn properties(
        &mut self,
        a: Option<&Value>,
        b: Option<&Value>,
        n: &Map<String, Value>,
        ptr: &str,
    ) {
        let (Some(old), Some(new)) = (as_map(a), as_map(b)) else {
            let detail = transition("properties", a, b);
            self.emit(Kind::Other, child(ptr, "properties"), detail);
            return;
        };
        let required = names(n.get("required")).unwrap_or_default();
        let all: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for name in all {
            let at = child(&child(ptr, "properties"), name);
            match (old.get(name), new.get(name)) {
                (Some(x), Some(y)) => self.node(x, y, &at),
                (Some(_), None) => {
                    let detail = format!("property {} removed", quote(name));
                    self.emit(Kind::PropertyRemoved, at, detail);
                }
                (None, Some(_)) if required.contains(&name.as_str()) => {
                    let detail = format!("property {} added (required)", quote(name));
                    self.emit(Kind::RequiredPropertyAdded, at, detail);
                }
                (None, Some(_)) => {
                    let detail = format!("property {} added", quote(name));
                    self.emit(Kind::OptionalPropertyAdded, at, detail);
                }
                (None, None) => {}
            }
        }
    }

    fn required(
        &mut self,
        a: Option<&Value>,
        b: Option<&Value>,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        ptr: &str,
    ) {
        let (Some(old), Some(new)) = (names(a), names(b)) else {
            let detail = transition("required", a, b);
            self.emit(Kind::Other, child(ptr, "required"), detail);
            return;
        };
        let has = |map: &Map<String, Value>, name: &str| {
            map.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(name))
        };
        for (i, &name) in old.iter().enumerate() {
            // A property removed outright was already reported as removed.
            let gone = has(o, name) && !has(n, name);
            if !new.contains(&name) && !old[..i].contains(&name) && !gone {
                let detail = format!("{} no longer required", quote(name));
                self.emit(
                    Kind::RequiredRemoved,
                    child_index(ptr, "required", i),
                    detail,
                );
            }
        }
        for (i, &name) in new.iter().enumerate() {
            // A new required property was already reported as added (required).
            let fresh = has(n, name) && !has(o, name);
            if !old.contains(&name) && !new[..i].contains(&name) && !fresh {
                let detail = format!("{} now required", quote(name));
                self.emit(Kind::RequiredAdded, child_index(ptr, "required", i), detail);
            }
        }
        if permuted(old, new) {
            self.emit_reordered("required", ptr);
        }
    }

    /// Reports `kw` at `ptr` as reordered when `old` and `new` hold the same elements (by
    /// canonical text, counting repeats) in a different order.
    fn reorder(&mut self, kw: &str, old: &[Value], new: &[Value], ptr: &str) {
        if old.len() == new.len()
            && permuted(
                old.iter().map(canonical).collect(),
                new.iter().map(canonical).collect(),
            )
        {
            self.emit_reordered(kw, ptr);
        }
    }

    fn emit_reordered(&mut self, kw: &str, ptr: &str) {
        self.emit(
            Kind::Reordered,
            child(ptr, kw),
            format!("{kw} order changed"),
        );
    }

    fn extra(&mut self, kw: &str, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let at = child(ptr, kw);
        match (Extra::of(a), Extra::of(b)) {
            (Extra::Malformed, _) | (_, Extra::Malformed) => {
                self.emit(Kind::Other, at, transition(kw, a, b));
            }
            // Absent, `true` and `{}` mean the same.
            (Extra::Open, Extra::Open) | (Extra::Closed, Extra::Closed) => {}
            (_, Extra::Closed) => self.emit(Kind::Closed, at, transition(kw, a, b)),
            (Extra::Closed, _) => self.emit(Kind::Opened, at, transition(kw, a, b)),
            _ => self.node(a.unwrap_or(&TRUE), b.unwrap_or(&TRUE), &at),
        }
    }

    fn pattern_properties(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let (Some(old), Some(new)) = (as_map(a), as_map(b)) else {
            let detail = transition("patternProperties", a, b);
            self.emit(Kind::Other, child(ptr, "patternProperties"), detail);
            return;
        };
        let all: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in all {
            let at = child(&child(ptr, "patternProperties"), key);
            match (old.get(key), new.get(key)) {
                (Some(x), Some(y)) => self.node(x, y, &at),
                (Some(_), None) => {
                    let detail = format!("patternProperties {} removed", quote(key));
                    self.emit(Kind::Other, at, detail);
                }
                (None, Some(_)) => {
                    let detail = format!("patternProperties {} added", quote(key));
                    self.emit(Kind::Other, at, detail);
                }
                (None, None) => {}
            }
        }
    }

    fn all_of(&mut self, a: Option<&Value>, b: Option<&Value>, ptr: &str) {
        let (Some(old), Some(new)) = (as_list(a), as_list(b)) else {
            self.emit(Kind::Other, child(ptr, "allOf"), transition("allOf", a, b));
            return;
        };
        for (i, (x, y)) in old.iter().zip(new).enumerate() {
            self.node(x, y, &child_index(ptr, "allOf", i));
        }
        for (i, branch) in new.iter().enumerate().skip(old.len()) {
            let detail = format!("allOf branch {} added", show(branch));
            self.emit(Kind::Tightened, child_index(ptr, "allOf", i), detail);
        }
        for (i, branch) in old.iter().enumerate().skip(new.len()) {
            let detail = format!("allOf branch {} removed", show(branch));
            self.emit(Kind::Loosened, child_index(ptr, "allOf", i), detail);
        }
    }

    /// `anyOf` / `oneOf`: branches compared as sets by canonical text.
    fn branches(
        &mut self,
        kw: &str,
        a: Option<&Value>,
        b: Option<&Value>,
        o: &Map<String, Value>,
        n: &Map<String, Value>,
        ptr: &str,
    ) {
        let (old, new) = match (a, b) {
            (Some(Value::Array(old)), Some(Value::Array(new))) => (old, new),
            // An absent list is one unconstrained branch: introducing a list constrains the
            // node, dropping one frees it. Unless the old node itself became a branch
            // (`{"type": "string"}` -> `{"anyOf": [{"type": "string"}, {"type": "null"}]}`,
            // how SDKs write an optional value): then the union only adds.
            (None, Some(Value::Array(list))) => {
                // Documentation keywords constrain nothing (a `default: null` comes along).
                let within_old = |m: &Map<String, Value>, skip: &str| {
                    m.iter()
                        .filter(|(k, _)| k.as_str() != skip && !is_doc_keyword(k))
                        .all(|(k, v)| o.get(k) == Some(v))
                };
                let old_is_a_branch = within_old(n, kw)
                    && list.iter().any(|branch| match branch {
                        Value::Bool(true) => true,
                        Value::Object(m) => within_old(m, ""),
                        _ => false,
                    });
                let kind = if old_is_a_branch {
                    Kind::TypeWidened
                } else {
                    Kind::Tightened
                };
                self.emit(kind, child(ptr, kw), transition(kw, a, b));
                return;
            }
            (Some(Value::Array(_)), None) => {
                self.emit(Kind::Loosened, child(ptr, kw), transition(kw, a, b));
                return;
            }
            _ => {
                self.emit(Kind::Other, child(ptr, kw), transition(kw, a, b));
                return;
            }
        };
        let old_text: Vec<String> = old.iter().map(canonical).collect();
        let new_text: Vec<String> = new.iter().map(canonical).collect();
        let mut taken = vec![false; new.len()];
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        let mut removed: Vec<usize> = Vec::new();
        for (i, text) in old_text.iter().enumerate() {
            match (0..new.len()).find(|&j| !taken[j] && new_text[j] == *text) {
                Some(j) => {
                    taken[j] = true;
                    // Same text can still reach a changed `$ref` target.
                    if !self.same(&old[i], &new[j]) {
                        pairs.push((i, j));
                    }
                }
                None => removed.push(i),
            }
        }
        let added: Vec<usize> = (0..new.len()).filter(|&j| !taken[j]).collect();
        if removed.is_empty() && added.is_empty() && old_text != new_text {
            // Every branch kept: only the order changed (a kept branch may still reach a
            // changed `$ref` target, compared below).
            self.emit_reordered(kw, ptr);
        }
        if removed.len() == added.len() {
            // As many branches went as came: most likely each was edited in place.
            pairs.extend(removed.into_iter().zip(added));
        } else {
            for i in removed {
                let detail = format!("{kw} branch {} removed", show(&old[i]));
                self.emit(Kind::TypeNarrowed, child_index(ptr, kw, i), detail);
            }
            for j in added {
                let detail = format!("{kw} branch {} added", show(&new[j]));
                self.emit(Kind::TypeWidened, child_index(ptr, kw, j), detail);
            }
        }
        pairs.sort_unstable_by_key(|&(_, j)| j);
        for (i, j) in pairs {
            self.node(&old[i], &new[j], &child_index(ptr, kw, j));
        }
    }
}

/// A subschema as the walk sees it.
enum Shape<'v> {
    /// An object schema; `true` is `{}`.
    Object(&'v Map<String, Value>),
    False,
    Malformed,
}

fn shape(v: &Value) -> Shape<'_> {
    match v {
        Value::Object(map) => Shape::Object(map),
        Value::Bool(true) => Shape::Object(&EMPTY),
        Value::Bool(false) => Shape::False,
        _ => Shape::Malformed,
    }
}

/// The `$ref` of one node.
enum Ref<'v, 'a> {
    None,
    /// A local reference that resolves: its target pointer and value.
    Local(String, &'a Value),
    /// A reference that is not followed: not local, an anchor, unresolvable or not a string.
    Opaque(&'v Value),
}

fn classify_ref<'v, 'a>(map: &'v Map<String, Value>, root: &'a Value) -> Ref<'v, 'a> {
    let Some(reference) = map.get("$ref") else {
        return Ref::None;
    };
    match reference.as_str().and_then(|r| resolve(root, r)) {
        Some((at, target)) => Ref::Local(at, target),
        None => Ref::Opaque(reference),
    }
}

/// Resolves a local `$ref` (`#` or `#/json/pointer`, percent-encoded) against `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<(String, &'a Value)> {
    let fragment = percent_decode(reference.strip_prefix('#')?)?;
    if fragment.is_empty() {
        return Some((fragment, root));
    }
    // `#name` is an anchor: not followed.
    if !fragment.starts_with('/') {
        return None;
    }
    let target = root.pointer(&fragment)?;
    Some((fragment, target))
}

fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The key of an inline (non-`$ref`) side in the cycle guard.
fn address(v: &Value) -> String {
    format!("@{v:p}")
}

/// A `$ref` target with its 2020-12 sibling keywords applied, when the node has siblings.
fn with_siblings(target: &Value, node: &Map<String, Value>) -> Option<Value> {
    let mut siblings = node.iter().filter(|(k, _)| *k != "$ref").peekable();
    siblings.peek()?;
    Some(match target {
        Value::Object(map) => {
            let mut merged = map.clone();
            merged.extend(siblings.map(|(k, v)| (k.clone(), v.clone())));
            Value::Object(merged)
        }
        Value::Bool(true) => Value::Object(siblings.map(|(k, v)| (k.clone(), v.clone())).collect()),
        other => other.clone(),
    })
}

/// Every local `$ref` whose target differs between the roots, or reaches one that does.
fn unstable_refs<'a>(old_root: &'a Value, new_root: &'a Value) -> HashSet<&'a str> {
    let mut refs = HashSet::new();
    collect_refs(old_root, &mut refs);
    collect_refs(new_root, &mut refs);
    let mut unstable = HashSet::new();
    let mut stable: Vec<(&str, &Value)> = Vec::new();
    for reference in refs {
        match (resolve(old_root, reference), resolve(new_root, reference)) {
            (Some((_, a)), Some((_, b))) if a == b => stable.push((reference, a)),
            (None, None) => {}
            _ => {
                unstable.insert(reference);
            }
        }
    }
    // An unchanged target that mentions a changed one is changed too: to a fixed point.
    loop {
        let before = unstable.len();
        stable.retain(|&(reference, target)| {
            let reaches = mentions_ref(target, &unstable);
            if reaches {
                unstable.insert(reference);
            }
            !reaches
        });
        if unstable.len() == before {
            return unstable;
        }
    }
}

fn collect_refs<'a>(v: &'a Value, out: &mut HashSet<&'a str>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                if k == "$ref"
                    && let Value::String(r) = x
                    && r.starts_with('#')
                {
                    out.insert(r);
                }
                collect_refs(x, out);
            }
        }
        Value::Array(list) => list.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

fn mentions_ref(v: &Value, refs: &HashSet<&str>) -> bool {
    match v {
        Value::Object(map) => map.iter().any(|(k, x)| {
            (k == "$ref" && x.as_str().is_some_and(|r| refs.contains(r))) || mentions_ref(x, refs)
        }),
        Value::Array(list) => list.iter().any(|x| mentions_ref(x, refs)),
        _ => false,
    }
}

/// `type` as a set of names.
enum Types<'v> {
    /// Absent: any type.
    Any,
    Set(Vec<&'v str>),
}

impl<'v> Types<'v> {
    /// `None` when malformed.
    fn parse(v: Option<&'v Value>) -> Option<Self> {
        match v {
            None => Some(Types::Any),
            Some(Value::String(t)) => Some(Types::Set(vec![t])),
            Some(Value::Array(list)) => list
                .iter()
                .map(Value::as_str)
                .collect::<Option<_>>()
                .map(Types::Set),
            Some(_) => None,
        }
    }

    fn members(&self) -> &[&'v str] {
        match self {
            Types::Any => &ALL_TYPES,
            Types::Set(set) => set,
        }
    }

    /// Whether every value of type `t` is accepted (`number` covers `integer`).
    fn covers(&self, t: &str) -> bool {
        match self {
            Types::Any => true,
            Types::Set(set) => set.contains(&t) || (t == "integer" && set.contains(&"number")),
        }
    }
}

/// `additionalProperties` / `unevaluatedProperties` as the walk sees it.
enum Extra {
    /// Absent, `true` or `{}`.
    Open,
    Closed,
    Schema,
    Malformed,
}

impl Extra {
    fn of(v: Option<&Value>) -> Self {
        match v {
            None | Some(Value::Bool(true)) => Extra::Open,
            Some(Value::Object(map)) if map.is_empty() => Extra::Open,
            Some(Value::Bool(false)) => Extra::Closed,
            Some(Value::Object(_)) => Extra::Schema,
            Some(_) => Extra::Malformed,
        }
    }
}

/// An array keyword's entries; absent is empty, `None` when malformed.
fn as_list(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None => Some(&[]),
        Some(Value::Array(list)) => Some(list),
        Some(_) => None,
    }
}

/// An object keyword's entries; absent is empty, `None` when malformed.
fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    match v {
        None => Some(&EMPTY),
        Some(Value::Object(map)) => Some(map),
        Some(_) => None,
    }
}

/// `required` as names; absent is empty, `None` when malformed.
fn names(v: Option<&Value>) -> Option<Vec<&str>> {
    as_list(v)?.iter().map(Value::as_str).collect()
}

/// Each distinct value with the index of its first occurrence.
fn first_occurrences(list: &[Value]) -> impl Iterator<Item = (usize, &Value)> {
    list.iter()
        .enumerate()
        .filter(|&(i, v)| !list[..i].contains(v))
}

/// Orders two JSON numbers exactly where both are integers.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(x.cmp(&y));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

/// Whether every multiple of `old` is a multiple of `new` (`old / new` is a whole number).
fn divides(old: &Number, new: &Number) -> bool {
    if let (Some(x), Some(y)) = (old.as_u64(), new.as_u64()) {
        return y != 0 && x % y == 0;
    }
    match (old.as_f64(), new.as_f64()) {
        (Some(x), Some(y)) if y != 0.0 => {
            let ratio = x / y;
            ratio.is_finite() && ratio >= 1.0 && ratio.fract() == 0.0
        }
        _ => false,
    }
}

/// Appends one escaped reference token to a JSON Pointer.
fn child(ptr: &str, token: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + token.len() + 1);
    out.push_str(ptr);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

fn child_index(ptr: &str, kw: &str, index: usize) -> String {
    format!("{}/{index}", child(ptr, kw))
}

/// Compact JSON with object keys sorted, whatever order the `Map` keeps.
fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by_key(|&(k, _)| k);
            out.push('{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                write_canonical(x, out);
            }
            out.push('}');
        }
        Value::Array(list) => {
            out.push('[');
            for (i, x) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        Value::String(s) => out.push_str(&json_string(s)),
        other => out.push_str(&other.to_string()),
    }
}

fn json_string(s: &str) -> String {
    // Serializing a `str` cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// Shortens a rendered value to [`MAX_SHOWN`] characters.
fn truncate(text: String) -> String {
    match text.char_indices().nth(MAX_SHOWN - 1) {
        Some((cut, _)) if text.chars().count() > MAX_SHOWN => format!("{}…", &text[..cut]),
        _ => text,
    }
}

fn show(v: &Value) -> String {
    truncate(canonical(v))
}

fn show_opt(v: Option<&Value>) -> String {
    v.map_or_else(|| "(absent)".to_owned(), show)
}

fn quote(name: &str) -> String {
    truncate(json_string(name))
}

/// `kw OLD -> NEW`.
fn transition(kw: &str, old: Option<&Value>, new: Option<&Value>) -> String {
    format!("{kw} {} -> {}", show_opt(old), show_opt(new))
}

/// Whether `new` is `old` in a different order (the same elements, counting repeats).
fn permuted<T: Ord>(mut old: Vec<T>, mut new: Vec<T>) -> bool {
    if old.len() != new.len() || old == new {
        return false;
    }
    old.sort_unstable();
    new.sort_unstable();
    old == new
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Input, Output};
    use serde_json::json;

    /// The (code, pointer) pairs of a diff.
    fn diff(old: &Value, new: &Value, direction: Direction) -> Vec<(&'static str, String)> {
        diff_schemas(old, new, direction)
            .into_iter()
            .map(|c| (c.code, c.pointer))
            .collect()
    }

    struct Case {
        name: &'static str,
        old: Value,
        new: Value,
        input: Vec<(&'static str, &'static str)>,
        output: Vec<(&'static str, &'static str)>,
    }

    fn case(
        name: &'static str,
        old: Value,
        new: Value,
        input: &[(&'static str, &'static str)],
        output: &[(&'static str, &'static str)],
    ) -> Case {
        Case {
            name,
            old,
            new,
            input: input.to_vec(),
            output: output.to_vec(),
        }
    }

    fn run(cases: &[Case]) {
        for case in cases {
            for (direction, want) in [(Input, &case.input), (Output, &case.output)] {
                let got = diff(&case.old, &case.new, direction);
                let want: Vec<(&str, String)> =
                    want.iter().map(|&(c, p)| (c, p.to_owned())).collect();
                assert_eq!(got, want, "{} ({direction:?})", case.name);
            }
        }
    }

    /// An object schema with one property `a`.
    fn prop(schema: Value) -> Value {
        json!({"type": "object", "properties": {"a": schema}})
    }

    const SAFETY_NET: &[(&str, &str)] = &[("schema-changed", "")];

    #[test]
    fn identical_schemas_and_key_order_diff_empty() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        for direction in [Input, Output] {
            assert!(diff_schemas(&schema, &schema.clone(), direction).is_empty());
            assert!(diff_schemas(&json!(true), &json!(true), direction).is_empty());
            let reordered: Value = serde_json::from_str(
                r#"{"required":["a"],"properties":{"a":{"type":"string"}},"type":"object"}"#,
            )
            .unwrap();
            assert!(diff_schemas(&schema, &reordered, direction).is_empty());
        }
    }

    #[test]
    fn properties_and_required() {
        let ab = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a"]});
        let a =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        let ab_required = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a", "b"]});
        let a_plain = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let b_required = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["b"]});
        run(&[
            case(
                "property removed",
                ab.clone(),
                a.clone(),
                &[("input-property-removed", "/properties/b")],
                &[("output-property-removed", "/properties/b")],
            ),
            case(
                "optional property added",
                a.clone(),
                ab.clone(),
                &[("input-optional-added", "/properties/b")],
                &[("output-property-added", "/properties/b")],
            ),
            case(
                "required property added",
                a_plain.clone(),
                b_required.clone(),
                &[("input-required-added", "/properties/b")],
                &[("output-property-added", "/properties/b")],
            ),
            case(
                "required property removed with its requirement",
                b_required,
                a_plain,
                &[("input-property-removed", "/properties/b")],
                &[("output-property-removed", "/properties/b")],
            ),
            case(
                "existing property becomes required",
                ab.clone(),
                ab_required.clone(),
                &[("input-required-added", "/required/1")],
                &[("output-type-narrowed", "/required/1")],
            ),
            case(
                "property no longer required",
                ab_required.clone(),
                ab.clone(),
                &[("input-required-removed", "/required/1")],
                &[("output-required-removed", "/required/1")],
            ),
            case(
                "required removed entirely",
                ab_required,
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}),
                &[
                    ("input-required-removed", "/required/0"),
                    ("input-required-removed", "/required/1"),
                ],
                &[
                    ("output-required-removed", "/required/0"),
                    ("output-required-removed", "/required/1"),
                ],
            ),
            case(
                "required name without a property",
                json!({"type": "object"}),
                json!({"type": "object", "required": ["x"]}),
                &[("input-required-added", "/required/0")],
                &[("output-type-narrowed", "/required/0")],
            ),
            case(
                "nested property under items",
                json!({"properties": {"list": {"type": "array", "items": {"type": "object", "properties": {"x": {}, "y": {}}}}}}),
                json!({"properties": {"list": {"type": "array", "items": {"type": "object", "properties": {"y": {}}}}}}),
                &[(
                    "input-property-removed",
                    "/properties/list/items/properties/x",
                )],
                &[(
                    "output-property-removed",
                    "/properties/list/items/properties/x",
                )],
            ),
            case(
                "a property named like a keyword is a property",
                json!({"properties": {"description": {"type": "string"}}}),
                json!({"properties": {"description": {"type": "number"}}}),
                &[("input-type-narrowed", "/properties/description/type")],
                &[("output-type-changed", "/properties/description/type")],
            ),
            case(
                "malformed properties",
                json!({"properties": {"a": {}}}),
                json!({"properties": ["a"]}),
                &[("schema-changed", "/properties")],
                &[("schema-changed", "/properties")],
            ),
        ]);
    }

    #[test]
    fn types() {
        let t = |v: Value| prop(json!({"type": v}));
        const AT: &str = "/properties/a/type";
        run(&[
            case(
                "type set loses a member",
                t(json!(["string", "null"])),
                t(json!("string")),
                &[("input-type-narrowed", AT)],
                &[("output-type-narrowed", AT)],
            ),
            case(
                "number to integer narrows",
                t(json!("number")),
                t(json!("integer")),
                &[("input-type-narrowed", AT)],
                &[("output-type-narrowed", AT)],
            ),
            case(
                "type added where absent narrows",
                prop(json!({})),
                t(json!("string")),
                &[("input-type-narrowed", AT)],
                &[("output-type-narrowed", AT)],
            ),
            case(
                "type set gains a member",
                t(json!("string")),
                t(json!(["string", "null"])),
                &[("input-type-widened", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "integer to number widens",
                t(json!("integer")),
                t(json!("number")),
                &[("input-type-widened", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "type removed widens",
                t(json!("string")),
                prop(json!({})),
                &[("input-type-widened", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "type replaced",
                t(json!("string")),
                t(json!("number")),
                &[("input-type-narrowed", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "integer member becomes number",
                t(json!(["string", "integer"])),
                t(json!(["string", "number"])),
                &[("input-type-widened", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "number becomes integer or string",
                t(json!("number")),
                t(json!(["integer", "string"])),
                &[("input-type-narrowed", AT)],
                &[("output-type-changed", AT)],
            ),
            case(
                "root type",
                json!({"type": "object"}),
                json!({"type": ["object", "null"]}),
                &[("input-type-widened", "/type")],
                &[("output-type-changed", "/type")],
            ),
            case(
                "malformed type",
                t(json!(5)),
                t(json!("string")),
                &[("schema-changed", AT)],
                &[("schema-changed", AT)],
            ),
            case(
                "same set spelled differently",
                t(json!("number")),
                t(json!(["integer", "number"])),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "type array reordered",
                t(json!(["string", "null"])),
                t(json!(["null", "string"])),
                &[("schema-reordered", AT)],
                &[("schema-reordered", AT)],
            ),
        ]);
    }

    #[test]
    fn enums() {
        let e = |v: Value| prop(json!({"type": "string", "enum": v}));
        run(&[
            case(
                "enum value removed",
                e(json!(["fast", "slow", "auto"])),
                e(json!(["fast", "auto"])),
                &[("input-enum-value-removed", "/properties/a/enum/1")],
                &[("output-type-narrowed", "/properties/a/enum/1")],
            ),
            case(
                "two enum values removed",
                e(json!(["a", "b", "c"])),
                e(json!(["a"])),
                &[
                    ("input-enum-value-removed", "/properties/a/enum/1"),
                    ("input-enum-value-removed", "/properties/a/enum/2"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/enum/1"),
                    ("output-type-narrowed", "/properties/a/enum/2"),
                ],
            ),
            case(
                "enum value added",
                e(json!(["a"])),
                e(json!(["a", "b"])),
                &[("input-enum-value-added", "/properties/a/enum/1")],
                &[("output-type-changed", "/properties/a/enum/1")],
            ),
            case(
                "enum value replaced",
                e(json!(["a"])),
                e(json!(["b"])),
                &[
                    ("input-enum-value-removed", "/properties/a/enum/0"),
                    ("input-enum-value-added", "/properties/a/enum/0"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/enum/0"),
                    ("output-type-changed", "/properties/a/enum/0"),
                ],
            ),
            case(
                "enum introduced",
                prop(json!({"type": "string"})),
                e(json!(["a"])),
                &[("input-constraint-tightened", "/properties/a/enum")],
                &[("output-type-narrowed", "/properties/a/enum")],
            ),
            case(
                "enum dropped",
                e(json!(["a"])),
                prop(json!({"type": "string"})),
                &[("input-constraint-loosened", "/properties/a/enum")],
                &[("output-type-changed", "/properties/a/enum")],
            ),
            case(
                "enum reordered",
                e(json!(["a", "b"])),
                e(json!(["b", "a"])),
                &[("schema-reordered", "/properties/a/enum")],
                &[("schema-reordered", "/properties/a/enum")],
            ),
            case(
                "malformed enum",
                e(json!(["a"])),
                e(json!("a")),
                &[("schema-changed", "/properties/a/enum")],
                &[("schema-changed", "/properties/a/enum")],
            ),
        ]);
    }

    /// (keyword, old, new) where old -> new is stricter and new -> old looser.
    const REVERSIBLE: &[(&str, Option<&str>, Option<&str>)] = &[
        ("minimum", Some("1"), Some("2")),
        ("minimum", None, Some("0")),
        ("exclusiveMinimum", Some("1"), Some("1.5")),
        ("exclusiveMinimum", None, Some("0")),
        ("exclusiveMinimum", Some("false"), Some("true")),
        ("exclusiveMinimum", None, Some("true")),
        ("maximum", Some("10"), Some("5")),
        ("maximum", None, Some("10")),
        ("exclusiveMaximum", Some("10"), Some("9.5")),
        ("exclusiveMaximum", Some("-1"), Some("-2")),
        ("minLength", Some("1"), Some("3")),
        ("minLength", None, Some("1")),
        ("maxLength", Some("100"), Some("50")),
        ("maxLength", None, Some("50")),
        ("minItems", Some("0"), Some("1")),
        ("maxItems", None, Some("3")),
        ("minProperties", Some("1"), Some("2")),
        ("maxProperties", Some("5"), Some("4")),
        ("minContains", Some("1"), Some("2")),
        ("maxContains", Some("3"), Some("2")),
        ("multipleOf", None, Some("2")),
        ("multipleOf", Some("5"), Some("10")),
        ("multipleOf", Some("0.5"), Some("1.5")),
        ("pattern", None, Some("\"^a\"")),
        ("format", None, Some("\"uri\"")),
        ("const", None, Some("\"x\"")),
        ("uniqueItems", None, Some("true")),
        ("uniqueItems", Some("false"), Some("true")),
        ("dependentRequired", None, Some(r#"{"a": ["b"]}"#)),
        ("propertyNames", None, Some(r#"{"pattern": "^x"}"#)),
    ];

    /// (keyword, old, new) where any change is stricter, both ways.
    const CHANGED: &[(&str, &str, &str)] = &[
        ("multipleOf", "3", "5"),
        ("pattern", "\"^a\"", "\"^b\""),
        ("format", "\"uri\"", "\"email\""),
        ("const", "\"x\"", "\"y\""),
        ("dependentRequired", r#"{"a": ["b"]}"#, r#"{"a": ["c"]}"#),
        (
            "propertyNames",
            r#"{"pattern": "^x"}"#,
            r#"{"pattern": "^y"}"#,
        ),
    ];

    fn with(kw: &str, value: Option<&str>) -> Value {
        let mut schema = Map::new();
        if let Some(text) = value {
            schema.insert(kw.to_owned(), serde_json::from_str(text).unwrap());
        }
        prop(Value::Object(schema))
    }

    #[test]
    fn constraints() {
        let mut cases = Vec::new();
        for &(kw, old, new) in REVERSIBLE {
            let at: &'static str = Box::leak(format!("/properties/a/{kw}").into_boxed_str());
            cases.push(case(
                kw,
                with(kw, old),
                with(kw, new),
                &[("input-constraint-tightened", at)],
                &[("output-type-narrowed", at)],
            ));
            cases.push(case(
                kw,
                with(kw, new),
                with(kw, old),
                &[("input-constraint-loosened", at)],
                &[("output-type-changed", at)],
            ));
        }
        for &(kw, old, new) in CHANGED {
            let at: &'static str = Box::leak(format!("/properties/a/{kw}").into_boxed_str());
            for (a, b) in [(old, new), (new, old)] {
                cases.push(case(
                    kw,
                    with(kw, Some(a)),
                    with(kw, Some(b)),
                    &[("input-constraint-tightened", at)],
                    &[("output-type-narrowed", at)],
                ));
            }
        }
        cases.extend([
            case(
                "numerically equal bound",
                with("minimum", Some("1")),
                with("minimum", Some("1.0")),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "uniqueItems false is absent",
                with("uniqueItems", None),
                with("uniqueItems", Some("false")),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "malformed bound",
                with("maxLength", Some("5")),
                with("maxLength", Some("\"5\"")),
                &[("schema-changed", "/properties/a/maxLength")],
                &[("schema-changed", "/properties/a/maxLength")],
            ),
            case(
                "allOf branch added",
                prop(json!({"allOf": [{"minLength": 1}]})),
                prop(json!({"allOf": [{"minLength": 1}, {"maxLength": 5}]})),
                &[("input-constraint-tightened", "/properties/a/allOf/1")],
                &[("output-type-narrowed", "/properties/a/allOf/1")],
            ),
            case(
                "allOf branch removed",
                prop(json!({"allOf": [{"minLength": 1}, {"maxLength": 5}]})),
                prop(json!({"allOf": [{"minLength": 1}]})),
                &[("input-constraint-loosened", "/properties/a/allOf/1")],
                &[("output-type-changed", "/properties/a/allOf/1")],
            ),
            case(
                "allOf introduced",
                prop(json!({})),
                prop(json!({"allOf": [{"maxLength": 5}]})),
                &[("input-constraint-tightened", "/properties/a/allOf/0")],
                &[("output-type-narrowed", "/properties/a/allOf/0")],
            ),
            case(
                "allOf branch edited",
                prop(json!({"allOf": [{"maxLength": 5}]})),
                prop(json!({"allOf": [{"maxLength": 4}]})),
                &[(
                    "input-constraint-tightened",
                    "/properties/a/allOf/0/maxLength",
                )],
                &[("output-type-narrowed", "/properties/a/allOf/0/maxLength")],
            ),
        ]);
        run(&cases);
    }

    #[test]
    fn additional_and_unevaluated_properties() {
        let obj = |extra: Option<Value>| {
            let mut schema = json!({"type": "object", "properties": {"a": {}}});
            if let Some(v) = extra {
                schema["additionalProperties"] = v;
            }
            schema
        };
        const AT: &str = "/additionalProperties";
        let mut cases = Vec::new();
        for open in [None, Some(json!(true)), Some(json!({}))] {
            cases.push(case(
                "closed",
                obj(open.clone()),
                obj(Some(json!(false))),
                &[("additional-properties-closed", AT)],
                &[("output-type-narrowed", AT)],
            ));
            cases.push(case(
                "opened",
                obj(Some(json!(false))),
                obj(open),
                &[("additional-properties-opened", AT)],
                &[("output-type-changed", AT)],
            ));
        }
        cases.extend([
            case(
                "schema closed",
                obj(Some(json!({"type": "string"}))),
                obj(Some(json!(false))),
                &[("additional-properties-closed", AT)],
                &[("output-type-narrowed", AT)],
            ),
            case(
                "schema to schema recurses",
                obj(Some(json!({"type": "string"}))),
                obj(Some(json!({"type": "number"}))),
                &[("input-type-narrowed", "/additionalProperties/type")],
                &[("output-type-changed", "/additionalProperties/type")],
            ),
            case(
                "open to schema recurses",
                obj(None),
                obj(Some(json!({"type": "string"}))),
                &[("input-type-narrowed", "/additionalProperties/type")],
                &[("output-type-narrowed", "/additionalProperties/type")],
            ),
            case(
                "absent and true are the same",
                obj(None),
                obj(Some(json!(true))),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "unevaluatedProperties closed",
                json!({"type": "object"}),
                json!({"type": "object", "unevaluatedProperties": false}),
                &[("additional-properties-closed", "/unevaluatedProperties")],
                &[("output-type-narrowed", "/unevaluatedProperties")],
            ),
            case(
                "unevaluatedProperties opened",
                json!({"type": "object", "unevaluatedProperties": false}),
                json!({"type": "object", "unevaluatedProperties": true}),
                &[("additional-properties-opened", "/unevaluatedProperties")],
                &[("output-type-changed", "/unevaluatedProperties")],
            ),
            case(
                "malformed additionalProperties",
                obj(Some(json!(false))),
                obj(Some(json!("no"))),
                &[("schema-changed", AT)],
                &[("schema-changed", AT)],
            ),
        ]);
        run(&cases);
    }

    #[test]
    fn documentation_keywords() {
        let mut cases = Vec::new();
        for kw in [
            "title",
            "description",
            "default",
            "examples",
            "deprecated",
            "readOnly",
            "writeOnly",
            "$comment",
        ] {
            let at: &'static str = Box::leak(format!("/properties/a/{kw}").into_boxed_str());
            let doc = |v: Value| prop(json!({"type": "string", kw: v}));
            for (old, new) in [
                (doc(json!("x")), doc(json!("y"))),
                (prop(json!({"type": "string"})), doc(json!(true))),
                (doc(json!(["e"])), prop(json!({"type": "string"}))),
            ] {
                cases.push(case(
                    kw,
                    old,
                    new,
                    &[("schema-doc-changed", at)],
                    &[("schema-doc-changed", at)],
                ));
            }
        }
        run(&cases);
    }

    #[test]
    fn comments_are_documentation() {
        let s = |defs: Value| via("#/$defs/S", defs);
        run(&[
            case(
                "$comment changed",
                prop(json!({"type": "string", "$comment": "x"})),
                prop(json!({"type": "string", "$comment": "y"})),
                &[("schema-doc-changed", "/properties/a/$comment")],
                &[("schema-doc-changed", "/properties/a/$comment")],
            ),
            case(
                "$comment added at the root",
                prop(json!({})),
                json!({"type": "object", "properties": {"a": {}}, "$comment": "note"}),
                &[("schema-doc-changed", "/$comment")],
                &[("schema-doc-changed", "/$comment")],
            ),
            case(
                "$comment removed beside a real change",
                prop(json!({"type": "string", "$comment": "x"})),
                prop(json!({"type": "number"})),
                &[
                    ("input-type-narrowed", "/properties/a/type"),
                    ("schema-doc-changed", "/properties/a/$comment"),
                ],
                &[
                    ("output-type-changed", "/properties/a/type"),
                    ("schema-doc-changed", "/properties/a/$comment"),
                ],
            ),
            case(
                "$comment changed inside a $ref target",
                s(json!({"S": {"type": "string", "$comment": "x"}})),
                s(json!({"S": {"type": "string", "$comment": "y"}})),
                &[("schema-doc-changed", "/properties/a/$comment")],
                &[("schema-doc-changed", "/properties/a/$comment")],
            ),
            case(
                "$comment added next to a $ref",
                s(json!({"S": {"type": "string"}})),
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/S", "$comment": "c"}}, "$defs": {"S": {"type": "string"}}}),
                &[("schema-doc-changed", "/properties/a/$comment")],
                &[("schema-doc-changed", "/properties/a/$comment")],
            ),
            case(
                "$comment next to a $ref replaced by inline",
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/S", "$comment": "c"}}, "$defs": {"S": {"type": "string"}}}),
                prop(json!({"type": "string"})),
                &[("schema-doc-changed", "/properties/a/$comment")],
                &[("schema-doc-changed", "/properties/a/$comment")],
            ),
            case(
                "$comment in an unreferenced $defs entry",
                s(json!({"S": {}, "Unused": {"$comment": "x"}})),
                s(json!({"S": {}, "Unused": {"$comment": "y"}})),
                SAFETY_NET,
                SAFETY_NET,
            ),
        ]);
    }

    #[test]
    fn keywords_without_a_rule() {
        let mut cases = Vec::new();
        for (kw, old, new) in [
            ("not", json!({"type": "null"}), json!({"type": "string"})),
            ("if", json!({"minLength": 1}), json!({"minLength": 2})),
            ("then", json!({"maxLength": 1}), json!({"maxLength": 2})),
            ("else", json!(true), json!(false)),
            ("contentMediaType", json!("text/plain"), json!("text/html")),
            ("x-vendor", json!(1), json!(2)),
            ("nullable", json!(false), json!(true)),
            (
                "dependentSchemas",
                json!({"a": {}}),
                json!({"a": {"required": ["b"]}}),
            ),
        ] {
            let at: &'static str = Box::leak(format!("/properties/a/{kw}").into_boxed_str());
            cases.push(case(
                kw,
                prop(json!({kw: old})),
                prop(json!({kw: new})),
                &[("schema-changed", at)],
                &[("schema-changed", at)],
            ));
            cases.push(case(
                kw,
                prop(json!({})),
                prop(json!({kw: new})),
                &[("schema-changed", at)],
                &[("schema-changed", at)],
            ));
        }
        cases.push(case(
            "$schema at the root",
            json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}),
            &[("schema-changed", "/$schema")],
            &[("schema-changed", "/$schema")],
        ));
        run(&cases);
    }

    #[test]
    fn boolean_and_malformed_schemas() {
        run(&[
            case(
                "true to false at a property",
                prop(json!(true)),
                prop(json!(false)),
                &[("input-type-narrowed", "/properties/a")],
                &[("output-type-narrowed", "/properties/a")],
            ),
            case(
                "false to true at a property",
                prop(json!(false)),
                prop(json!(true)),
                &[("input-type-widened", "/properties/a")],
                &[("output-type-changed", "/properties/a")],
            ),
            case(
                "schema to false",
                prop(json!({"type": "string"})),
                prop(json!(false)),
                &[("input-type-narrowed", "/properties/a")],
                &[("output-type-narrowed", "/properties/a")],
            ),
            case(
                "true to a schema",
                prop(json!(true)),
                prop(json!({"type": "string"})),
                &[("input-type-narrowed", "/properties/a/type")],
                &[("output-type-narrowed", "/properties/a/type")],
            ),
            case(
                "{} and true are the same",
                prop(json!({})),
                prop(json!(true)),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "root true to false",
                json!(true),
                json!(false),
                &[("input-type-narrowed", "")],
                &[("output-type-narrowed", "")],
            ),
            case(
                "malformed node",
                prop(json!(5)),
                prop(json!(6)),
                &[("schema-changed", "/properties/a")],
                &[("schema-changed", "/properties/a")],
            ),
            case(
                "schema to malformed",
                prop(json!({})),
                prop(json!("x")),
                &[("schema-changed", "/properties/a")],
                &[("schema-changed", "/properties/a")],
            ),
        ]);
    }

    /// `{"type":"object","properties":{"a":{"$ref": reference}},"$defs": defs}`.
    fn via(reference: &str, defs: Value) -> Value {
        json!({"type": "object", "properties": {"a": {"$ref": reference}}, "$defs": defs})
    }

    #[test]
    fn refs() {
        let node = |name_type: &str| {
            json!({
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/Node"}},
                "$defs": {"Node": {"type": "object", "properties": {
                    "name": {"type": name_type},
                    "next": {"$ref": "#/$defs/Node"},
                }}},
            })
        };
        let root_cycle = |name_type: &str| {
            json!({"type": "object", "properties": {
                "name": {"type": name_type},
                "child": {"$ref": "#"},
            }})
        };
        run(&[
            case(
                "enum change through $defs",
                json!({"properties": {"mode": {"$ref": "#/$defs/Mode"}}, "$defs": {"Mode": {"enum": ["fast", "slow"]}}}),
                json!({"properties": {"mode": {"$ref": "#/$defs/Mode"}}, "$defs": {"Mode": {"enum": ["slow"]}}}),
                &[("input-enum-value-removed", "/properties/mode/enum/0")],
                &[("output-type-narrowed", "/properties/mode/enum/0")],
            ),
            case(
                "draft-7 definitions",
                json!({"properties": {"a": {"$ref": "#/definitions/S"}}, "definitions": {"S": {"maxLength": 9}}}),
                json!({"properties": {"a": {"$ref": "#/definitions/S"}}, "definitions": {"S": {"maxLength": 8}}}),
                &[("input-constraint-tightened", "/properties/a/maxLength")],
                &[("output-type-narrowed", "/properties/a/maxLength")],
            ),
            case(
                "only the target changes",
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                via("#/$defs/S", json!({"S": {"type": ["string", "null"]}})),
                &[("input-type-widened", "/properties/a/type")],
                &[("output-type-changed", "/properties/a/type")],
            ),
            case(
                "every referring location reports",
                json!({"properties": {"a": {"$ref": "#/$defs/S"}, "b": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"type": "string"}}}),
                json!({"properties": {"a": {"$ref": "#/$defs/S"}, "b": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"type": "number"}}}),
                &[
                    ("input-type-narrowed", "/properties/a/type"),
                    ("input-type-narrowed", "/properties/b/type"),
                ],
                &[
                    ("output-type-changed", "/properties/a/type"),
                    ("output-type-changed", "/properties/b/type"),
                ],
            ),
            case(
                "cycle through $defs",
                node("string"),
                node("number"),
                &[(
                    "input-type-narrowed",
                    "/properties/tree/properties/name/type",
                )],
                &[(
                    "output-type-changed",
                    "/properties/tree/properties/name/type",
                )],
            ),
            case(
                "cycle through the root",
                root_cycle("string"),
                root_cycle("number"),
                &[("input-type-narrowed", "/properties/name/type")],
                &[("output-type-changed", "/properties/name/type")],
            ),
            case(
                "mutual recursion",
                json!({"$ref": "#/$defs/A", "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/B"}}}, "B": {"properties": {"a": {"$ref": "#/$defs/A"}, "n": {"minimum": 0}}}}}),
                json!({"$ref": "#/$defs/A", "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/B"}}}, "B": {"properties": {"a": {"$ref": "#/$defs/A"}, "n": {"minimum": 1}}}}}),
                &[(
                    "input-constraint-tightened",
                    "/properties/b/properties/n/minimum",
                )],
                &[("output-type-narrowed", "/properties/b/properties/n/minimum")],
            ),
            case(
                "chain of refs to a changed target",
                via(
                    "#/$defs/A",
                    json!({"A": {"$ref": "#/$defs/B"}, "B": {"type": "string"}}),
                ),
                via(
                    "#/$defs/A",
                    json!({"A": {"$ref": "#/$defs/B"}, "B": {"type": "integer"}}),
                ),
                &[("input-type-narrowed", "/properties/a/type")],
                &[("output-type-changed", "/properties/a/type")],
            ),
            case(
                "retargeted to different content",
                via(
                    "#/$defs/A",
                    json!({"A": {"type": "string"}, "B": {"type": "number"}}),
                ),
                via(
                    "#/$defs/B",
                    json!({"A": {"type": "string"}, "B": {"type": "number"}}),
                ),
                &[("input-type-narrowed", "/properties/a/type")],
                &[("output-type-changed", "/properties/a/type")],
            ),
            case(
                "retargeted to equal content",
                via("#/$defs/A", json!({"A": {"type": "string"}})),
                via("#/$defs/B", json!({"B": {"type": "string"}})),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "ref replaced by a wider inline schema",
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                prop(json!({"type": ["string", "null"]})),
                &[("input-type-widened", "/properties/a/type")],
                &[("output-type-changed", "/properties/a/type")],
            ),
            case(
                "inline schema replaced by an equal ref",
                prop(json!({"type": "string"})),
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "sibling added next to a ref",
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                json!({"properties": {"a": {"$ref": "#/$defs/S", "description": "d"}}, "$defs": {"S": {"type": "string"}}, "type": "object"}),
                &[("schema-doc-changed", "/properties/a/description")],
                &[("schema-doc-changed", "/properties/a/description")],
            ),
            case(
                "target and sibling both change",
                json!({"properties": {"a": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"maxLength": 9}}}),
                json!({"properties": {"a": {"$ref": "#/$defs/S", "description": "d"}}, "$defs": {"S": {"maxLength": 5}}}),
                &[
                    ("input-constraint-tightened", "/properties/a/maxLength"),
                    ("schema-doc-changed", "/properties/a/description"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/maxLength"),
                    ("schema-doc-changed", "/properties/a/description"),
                ],
            ),
            case(
                "ref with siblings replaced by inline",
                json!({"properties": {"a": {"$ref": "#/$defs/S", "description": "d"}}, "$defs": {"S": {"type": "string"}}}),
                json!({"properties": {"a": {"type": "string", "description": "e"}}}),
                &[("schema-doc-changed", "/properties/a/description")],
                &[("schema-doc-changed", "/properties/a/description")],
            ),
            case(
                "non-local ref changed",
                prop(json!({"$ref": "https://example.com/a.json"})),
                prop(json!({"$ref": "https://example.com/b.json"})),
                &[("schema-changed", "/properties/a/$ref")],
                &[("schema-changed", "/properties/a/$ref")],
            ),
            case(
                "non-local ref kept, sibling changed",
                prop(json!({"$ref": "other.json", "description": "a"})),
                prop(json!({"$ref": "other.json", "description": "b"})),
                &[("schema-doc-changed", "/properties/a/description")],
                &[("schema-doc-changed", "/properties/a/description")],
            ),
            case(
                "non-local ref replaced by inline",
                prop(json!({"$ref": "other.json"})),
                prop(json!({"type": "string"})),
                &[("schema-changed", "/properties/a/$ref")],
                &[("schema-changed", "/properties/a/$ref")],
            ),
            case(
                "unresolvable local ref changed",
                prop(json!({"$ref": "#/$defs/Missing"})),
                prop(json!({"$ref": "#/$defs/Gone"})),
                &[("schema-changed", "/properties/a/$ref")],
                &[("schema-changed", "/properties/a/$ref")],
            ),
            case(
                "ref no longer resolves",
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                via("#/$defs/S", json!({})),
                &[("schema-changed", "/properties/a/$ref")],
                &[("schema-changed", "/properties/a/$ref")],
            ),
            case(
                "anchor refs are not followed",
                prop(json!({"$ref": "#node"})),
                prop(json!({"$ref": "#leaf"})),
                &[("schema-changed", "/properties/a/$ref")],
                &[("schema-changed", "/properties/a/$ref")],
            ),
            case(
                "escaped and percent-encoded ref pointers",
                json!({"properties": {"a": {"$ref": "#/$defs/a%20b"}, "b": {"$ref": "#/$defs/x~1y"}}, "$defs": {"a b": {"minimum": 1}, "x/y": {"minimum": 1}}}),
                json!({"properties": {"a": {"$ref": "#/$defs/a%20b"}, "b": {"$ref": "#/$defs/x~1y"}}, "$defs": {"a b": {"minimum": 2}, "x/y": {"minimum": 0}}}),
                &[
                    ("input-constraint-tightened", "/properties/a/minimum"),
                    ("input-constraint-loosened", "/properties/b/minimum"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/minimum"),
                    ("output-type-changed", "/properties/b/minimum"),
                ],
            ),
            case(
                "ref inside an unchanged anyOf branch",
                json!({"properties": {"a": {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}]}}, "$defs": {"S": {"type": "string", "maxLength": 10}}}),
                json!({"properties": {"a": {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}]}}, "$defs": {"S": {"type": "string", "maxLength": 5}}}),
                &[(
                    "input-constraint-tightened",
                    "/properties/a/anyOf/0/maxLength",
                )],
                &[("output-type-narrowed", "/properties/a/anyOf/0/maxLength")],
            ),
            case(
                "ref inside a keyword without a rule",
                json!({"properties": {"a": {"not": {"$ref": "#/$defs/S"}}}, "$defs": {"S": {"type": "string"}}}),
                json!({"properties": {"a": {"not": {"$ref": "#/$defs/S"}}}, "$defs": {"S": {"type": "number"}}}),
                &[("schema-changed", "/properties/a/not")],
                &[("schema-changed", "/properties/a/not")],
            ),
            case(
                "unreferenced $defs change",
                via("#/$defs/S", json!({"S": {}, "Unused": {"type": "string"}})),
                via("#/$defs/S", json!({"S": {}, "Unused": {"type": "number"}})),
                SAFETY_NET,
                SAFETY_NET,
            ),
        ]);
    }

    #[test]
    fn self_referential_refs_terminate() {
        // A ref to itself against an inline schema, and on both sides.
        let looped = json!({"properties": {"a": {"$ref": "#/$defs/L"}}, "$defs": {"L": {"$ref": "#/$defs/L"}}});
        let inline = json!({"properties": {"a": {"type": "string"}}});
        for direction in [Input, Output] {
            assert_eq!(
                diff(&looped, &inline, direction),
                [("schema-changed", String::new())]
            );
            assert_eq!(
                diff(&inline, &looped, direction),
                [("schema-changed", String::new())]
            );
        }
        let mut other = looped.clone();
        other["properties"]["a"]["description"] = json!("d");
        assert_eq!(
            diff(&looped, &other, Input),
            [("schema-doc-changed", "/properties/a/description".to_owned())]
        );
    }

    #[test]
    fn any_of_and_one_of() {
        let any = |branches: Value| prop(json!({"anyOf": branches}));
        run(&[
            case(
                "branch added",
                any(json!([{"type": "string"}])),
                any(json!([{"type": "string"}, {"type": "null"}])),
                &[("input-type-widened", "/properties/a/anyOf/1")],
                &[("output-type-changed", "/properties/a/anyOf/1")],
            ),
            case(
                "branch removed",
                any(json!([{"type": "string"}, {"type": "null"}])),
                any(json!([{"type": "string"}])),
                &[("input-type-narrowed", "/properties/a/anyOf/1")],
                &[("output-type-narrowed", "/properties/a/anyOf/1")],
            ),
            case(
                "branch edited in place, reordered",
                any(json!([{"type": "string", "maxLength": 10}, {"type": "null"}])),
                any(json!([{"type": "null"}, {"type": "string", "maxLength": 5}])),
                &[(
                    "input-constraint-tightened",
                    "/properties/a/anyOf/1/maxLength",
                )],
                &[("output-type-narrowed", "/properties/a/anyOf/1/maxLength")],
            ),
            case(
                "two removed, one added",
                any(json!([{"type": "string"}, {"type": "number"}, {"type": "boolean"}])),
                any(json!([{"type": "string"}, {"type": "null"}])),
                &[
                    ("input-type-narrowed", "/properties/a/anyOf/1"),
                    ("input-type-narrowed", "/properties/a/anyOf/2"),
                    ("input-type-widened", "/properties/a/anyOf/1"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/anyOf/1"),
                    ("output-type-narrowed", "/properties/a/anyOf/2"),
                    ("output-type-changed", "/properties/a/anyOf/1"),
                ],
            ),
            case(
                "oneOf branch edited",
                prop(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
                prop(json!({"oneOf": [{"type": "string"}, {"type": "number"}]})),
                &[("input-type-widened", "/properties/a/oneOf/1/type")],
                &[("output-type-changed", "/properties/a/oneOf/1/type")],
            ),
            case(
                "oneOf branch added",
                prop(json!({"oneOf": [{"type": "string"}]})),
                prop(json!({"oneOf": [{"type": "string"}, {"type": "null"}]})),
                &[("input-type-widened", "/properties/a/oneOf/1")],
                &[("output-type-changed", "/properties/a/oneOf/1")],
            ),
            case(
                "anyOf introduced",
                prop(json!({})),
                any(json!([{"type": "string"}, {"type": "null"}])),
                &[("input-constraint-tightened", "/properties/a/anyOf")],
                &[("output-type-narrowed", "/properties/a/anyOf")],
            ),
            case(
                "oneOf removed",
                prop(json!({"oneOf": [{"type": "string"}, {"type": "null"}]})),
                prop(json!({})),
                &[("input-constraint-loosened", "/properties/a/oneOf")],
                &[("output-type-changed", "/properties/a/oneOf")],
            ),
            case(
                "branches reordered",
                any(json!([{"type": "string"}, {"type": "null"}])),
                any(json!([{"type": "null"}, {"type": "string"}])),
                &[("schema-reordered", "/properties/a/anyOf")],
                &[("schema-reordered", "/properties/a/anyOf")],
            ),
        ]);
    }

    #[test]
    fn branch_lists_introduced_and_removed() {
        let two = json!([{"maxLength": 5}, {"pattern": "^a"}]);
        run(&[
            case(
                "anyOf introduced on a typed property",
                prop(json!({"type": "string"})),
                prop(json!({"type": "string", "anyOf": two})),
                &[("input-constraint-tightened", "/properties/a/anyOf")],
                &[("output-type-narrowed", "/properties/a/anyOf")],
            ),
            case(
                "oneOf introduced on a typed property",
                prop(json!({"type": "string"})),
                prop(json!({"type": "string", "oneOf": two})),
                &[("input-constraint-tightened", "/properties/a/oneOf")],
                &[("output-type-narrowed", "/properties/a/oneOf")],
            ),
            case(
                "anyOf removed from a typed property",
                prop(json!({"type": "string", "anyOf": two})),
                prop(json!({"type": "string"})),
                &[("input-constraint-loosened", "/properties/a/anyOf")],
                &[("output-type-changed", "/properties/a/anyOf")],
            ),
            case(
                "oneOf removed from a typed property",
                prop(json!({"type": "string", "oneOf": two})),
                prop(json!({"type": "string"})),
                &[("input-constraint-loosened", "/properties/a/oneOf")],
                &[("output-type-changed", "/properties/a/oneOf")],
            ),
            case(
                "anyOf introduced at the root",
                json!({"type": "object"}),
                json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                &[("input-constraint-tightened", "/anyOf")],
                &[("output-type-narrowed", "/anyOf")],
            ),
            case(
                "oneOf removed at the root",
                json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                json!({"type": "object"}),
                &[("input-constraint-loosened", "/oneOf")],
                &[("output-type-changed", "/oneOf")],
            ),
            case(
                "anyOf replaced by oneOf",
                prop(json!({"anyOf": two})),
                prop(json!({"oneOf": two})),
                &[
                    ("input-constraint-loosened", "/properties/a/anyOf"),
                    ("input-constraint-tightened", "/properties/a/oneOf"),
                ],
                &[
                    ("output-type-changed", "/properties/a/anyOf"),
                    ("output-type-narrowed", "/properties/a/oneOf"),
                ],
            ),
            case(
                "the old node becoming one branch of an anyOf only widens",
                prop(json!({"type": "string", "description": "d"})),
                prop(json!({"description": "d", "anyOf": [{"type": "string"}, {"type": "null"}]})),
                &[
                    ("input-type-widened", "/properties/a/type"),
                    ("input-type-widened", "/properties/a/anyOf"),
                ],
                &[
                    ("output-type-changed", "/properties/a/type"),
                    ("output-type-changed", "/properties/a/anyOf"),
                ],
            ),
            case(
                "an optional value as the Python SDK writes it only widens",
                prop(json!({"type": "string", "title": "Q"})),
                prop(
                    json!({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Q"}),
                ),
                &[
                    ("input-type-widened", "/properties/a/type"),
                    ("input-type-widened", "/properties/a/anyOf"),
                    ("schema-doc-changed", "/properties/a/default"),
                ],
                &[
                    ("output-type-changed", "/properties/a/type"),
                    ("output-type-changed", "/properties/a/anyOf"),
                    ("schema-doc-changed", "/properties/a/default"),
                ],
            ),
            case(
                "an anyOf whose branches are all stricter than the old node narrows",
                prop(json!({"type": "string"})),
                prop(json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]})),
                &[
                    ("input-type-widened", "/properties/a/type"),
                    ("input-constraint-tightened", "/properties/a/anyOf"),
                ],
                &[
                    ("output-type-changed", "/properties/a/type"),
                    ("output-type-narrowed", "/properties/a/anyOf"),
                ],
            ),
            case(
                "anyOf introduced in a $ref target",
                via("#/$defs/S", json!({"S": {"type": "string"}})),
                via("#/$defs/S", json!({"S": {"type": "string", "anyOf": two}})),
                &[("input-constraint-tightened", "/properties/a/anyOf")],
                &[("output-type-narrowed", "/properties/a/anyOf")],
            ),
            case(
                "malformed anyOf introduced",
                prop(json!({"type": "string"})),
                prop(json!({"type": "string", "anyOf": {"maxLength": 5}})),
                &[("schema-changed", "/properties/a/anyOf")],
                &[("schema-changed", "/properties/a/anyOf")],
            ),
            case(
                "malformed oneOf removed",
                prop(json!({"type": "string", "oneOf": {"maxLength": 5}})),
                prop(json!({"type": "string"})),
                &[("schema-changed", "/properties/a/oneOf")],
                &[("schema-changed", "/properties/a/oneOf")],
            ),
        ]);
    }

    #[test]
    fn reorders_are_cosmetic() {
        let required = |r: Value| json!({"properties": {"a": {}, "b": {}}, "required": r});
        let mode = |e: Value| json!({"properties": {"mode": {"type": "string", "enum": e}}});
        run(&[
            case(
                "required reordered",
                required(json!(["a", "b"])),
                required(json!(["b", "a"])),
                &[("schema-reordered", "/required")],
                &[("schema-reordered", "/required")],
            ),
            case(
                "enum reordered",
                mode(json!(["fast", "slow", "auto"])),
                mode(json!(["auto", "fast", "slow"])),
                &[("schema-reordered", "/properties/mode/enum")],
                &[("schema-reordered", "/properties/mode/enum")],
            ),
            case(
                "enum of objects reordered, keys in another order",
                mode(json!([{"a": 1, "b": 2}, 3])),
                mode(json!([3, {"b": 2, "a": 1}])),
                &[("schema-reordered", "/properties/mode/enum")],
                &[("schema-reordered", "/properties/mode/enum")],
            ),
            case(
                "enum with a repeat reordered",
                mode(json!(["a", "a", "b"])),
                mode(json!(["a", "b", "a"])),
                &[("schema-reordered", "/properties/mode/enum")],
                &[("schema-reordered", "/properties/mode/enum")],
            ),
            case(
                "type array reordered at the root",
                json!({"type": ["object", "null"]}),
                json!({"type": ["null", "object"]}),
                &[("schema-reordered", "/type")],
                &[("schema-reordered", "/type")],
            ),
            case(
                "anyOf branches reordered",
                prop(json!({"anyOf": [{"type": "string"}, {"type": "null"}, {"minimum": 1}]})),
                prop(json!({"anyOf": [{"minimum": 1}, {"type": "string"}, {"type": "null"}]})),
                &[("schema-reordered", "/properties/a/anyOf")],
                &[("schema-reordered", "/properties/a/anyOf")],
            ),
            case(
                "oneOf branches reordered",
                prop(json!({"oneOf": [{"type": "string"}, {"type": "null"}]})),
                prop(json!({"oneOf": [{"type": "null"}, {"type": "string"}]})),
                &[("schema-reordered", "/properties/a/oneOf")],
                &[("schema-reordered", "/properties/a/oneOf")],
            ),
            case(
                "enum reordered in a $ref target",
                via("#/$defs/S", json!({"S": {"enum": ["a", "b"]}})),
                via("#/$defs/S", json!({"S": {"enum": ["b", "a"]}})),
                &[("schema-reordered", "/properties/a/enum")],
                &[("schema-reordered", "/properties/a/enum")],
            ),
            case(
                "reorder beside a real change",
                required(json!(["a", "b"])),
                json!({"properties": {"a": {"type": "string"}, "b": {}}, "required": ["b", "a"]}),
                &[
                    ("input-type-narrowed", "/properties/a/type"),
                    ("schema-reordered", "/required"),
                ],
                &[
                    ("output-type-narrowed", "/properties/a/type"),
                    ("schema-reordered", "/required"),
                ],
            ),
            case(
                "branches reordered, a kept branch reaches a changed target",
                json!({"properties": {"a": {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}]}}, "$defs": {"S": {"maxLength": 10}}}),
                json!({"properties": {"a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/S"}]}}, "$defs": {"S": {"maxLength": 5}}}),
                &[
                    ("schema-reordered", "/properties/a/anyOf"),
                    (
                        "input-constraint-tightened",
                        "/properties/a/anyOf/1/maxLength",
                    ),
                ],
                &[
                    ("schema-reordered", "/properties/a/anyOf"),
                    ("output-type-narrowed", "/properties/a/anyOf/1/maxLength"),
                ],
            ),
            // Not reorders: a repeat dropped or a type spelled differently is left to the
            // safety net; a value swapped is a real change.
            case(
                "enum repeat dropped",
                mode(json!(["a", "a", "b"])),
                mode(json!(["b", "a"])),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "required repeat dropped",
                required(json!(["a", "a"])),
                required(json!(["a"])),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "type string to one-element array",
                prop(json!({"type": "string"})),
                prop(json!({"type": ["string"]})),
                SAFETY_NET,
                SAFETY_NET,
            ),
            case(
                "enum reordered and a value swapped",
                mode(json!(["a", "b"])),
                mode(json!(["c", "a"])),
                &[
                    ("input-enum-value-removed", "/properties/mode/enum/1"),
                    ("input-enum-value-added", "/properties/mode/enum/0"),
                ],
                &[
                    ("output-type-narrowed", "/properties/mode/enum/1"),
                    ("output-type-changed", "/properties/mode/enum/0"),
                ],
            ),
        ]);
    }

    #[test]
    fn arrays() {
        let arr = |extra: Value| {
            let mut schema = json!({"type": "array"});
            if let (Value::Object(s), Value::Object(e)) = (&mut schema, extra) {
                s.extend(e);
            }
            prop(schema)
        };
        run(&[
            case(
                "items schema recursion",
                arr(json!({"items": {"type": "string"}})),
                arr(json!({"items": {"type": "integer"}})),
                &[("input-type-narrowed", "/properties/a/items/type")],
                &[("output-type-changed", "/properties/a/items/type")],
            ),
            case(
                "items introduced",
                arr(json!({})),
                arr(json!({"items": {"type": "string"}})),
                &[("input-type-narrowed", "/properties/a/items/type")],
                &[("output-type-narrowed", "/properties/a/items/type")],
            ),
            case(
                "draft-4 items array entry added and edited",
                arr(json!({"items": [{"type": "string"}]})),
                arr(json!({"items": [{"type": ["string", "null"]}, {"type": "number"}]})),
                &[
                    ("input-type-widened", "/properties/a/items/0/type"),
                    ("input-constraint-tightened", "/properties/a/items/1"),
                ],
                &[
                    ("output-type-changed", "/properties/a/items/0/type"),
                    ("output-type-narrowed", "/properties/a/items/1"),
                ],
            ),
            case(
                "items array to schema",
                arr(json!({"items": [{"type": "string"}]})),
                arr(json!({"items": {"type": "string"}})),
                &[("schema-changed", "/properties/a/items")],
                &[("schema-changed", "/properties/a/items")],
            ),
            case(
                "prefixItems entry added",
                arr(json!({"prefixItems": [{"type": "string"}]})),
                arr(json!({"prefixItems": [{"type": "string"}, {"type": "number"}]})),
                &[("input-constraint-tightened", "/properties/a/prefixItems/1")],
                &[("output-type-narrowed", "/properties/a/prefixItems/1")],
            ),
            case(
                "prefixItems entry removed",
                arr(json!({"prefixItems": [{"type": "string"}, {"type": "number"}]})),
                arr(json!({"prefixItems": [{"type": "string"}]})),
                &[("input-constraint-loosened", "/properties/a/prefixItems/1")],
                &[("output-type-changed", "/properties/a/prefixItems/1")],
            ),
            case(
                "prefixItems entry edited",
                arr(json!({"prefixItems": [{"type": "string"}]})),
                arr(json!({"prefixItems": [{"type": "number"}]})),
                &[("input-type-narrowed", "/properties/a/prefixItems/0/type")],
                &[("output-type-changed", "/properties/a/prefixItems/0/type")],
            ),
            case(
                "contains added",
                arr(json!({})),
                arr(json!({"contains": {"const": 1}})),
                &[("input-constraint-tightened", "/properties/a/contains")],
                &[("output-type-narrowed", "/properties/a/contains")],
            ),
            case(
                "contains removed",
                arr(json!({"contains": {"const": 1}})),
                arr(json!({})),
                &[("input-constraint-loosened", "/properties/a/contains")],
                &[("output-type-changed", "/properties/a/contains")],
            ),
            case(
                "contains edited",
                arr(json!({"contains": {"type": "string"}})),
                arr(json!({"contains": {"type": ["string", "null"]}})),
                &[("input-type-widened", "/properties/a/contains/type")],
                &[("output-type-changed", "/properties/a/contains/type")],
            ),
        ]);
    }

    #[test]
    fn pattern_properties() {
        let pp = |map: Value| json!({"type": "object", "patternProperties": map});
        run(&[
            case(
                "pattern key added",
                pp(json!({"^x-": {}})),
                pp(json!({"^x-": {}, "^a/b$": {}})),
                &[("schema-changed", "/patternProperties/^a~1b$")],
                &[("schema-changed", "/patternProperties/^a~1b$")],
            ),
            case(
                "pattern key removed",
                pp(json!({"^x-": {}})),
                json!({"type": "object"}),
                &[("schema-changed", "/patternProperties/^x-")],
                &[("schema-changed", "/patternProperties/^x-")],
            ),
            case(
                "pattern schema edited",
                pp(json!({"^x-": {"type": "string"}})),
                pp(json!({"^x-": {"type": "number"}})),
                &[("input-type-narrowed", "/patternProperties/^x-/type")],
                &[("output-type-changed", "/patternProperties/^x-/type")],
            ),
        ]);
    }

    #[test]
    fn pointers_are_escaped() {
        let odd = |t: &str| json!({"properties": {"a/b~c": {"properties": {"~": {"type": t}}}}});
        run(&[
            case(
                "escaped property names",
                odd("string"),
                odd("number"),
                &[(
                    "input-type-narrowed",
                    "/properties/a~1b~0c/properties/~0/type",
                )],
                &[(
                    "output-type-changed",
                    "/properties/a~1b~0c/properties/~0/type",
                )],
            ),
            case(
                "escaped removed property",
                json!({"properties": {"x/y": {}}}),
                json!({"properties": {}}),
                &[("input-property-removed", "/properties/x~1y")],
                &[("output-property-removed", "/properties/x~1y")],
            ),
        ]);
    }

    #[test]
    fn safety_net() {
        let bound = |m: Value| json!({"properties": {"a": {}, "b": {"minimum": m}}});
        let changes = diff_schemas(&bound(json!(1)), &bound(json!(1.0)), Input);
        assert_eq!(
            changes,
            [SchemaChange {
                code: "schema-changed",
                pointer: String::new(),
                detail: "schema changed".to_owned(),
            }]
        );
        // Not needed, so not added, when something else was reported.
        let mut new = bound(json!(1.0));
        new["properties"]["a"] = json!({"type": "string"});
        assert_eq!(
            diff(&bound(json!(1)), &new, Output),
            [("output-type-narrowed", "/properties/a/type".to_owned())]
        );
        // A reorder is reported as such, and the safety net stays quiet.
        let required = |r: Value| json!({"properties": {"a": {}, "b": {}}, "required": r});
        for direction in [Input, Output] {
            assert_eq!(
                diff_schemas(
                    &required(json!(["a", "b"])),
                    &required(json!(["b", "a"])),
                    direction,
                ),
                [SchemaChange {
                    code: "schema-reordered",
                    pointer: "/required".to_owned(),
                    detail: "required order changed".to_owned(),
                }]
            );
        }
    }

    #[test]
    fn details() {
        let detail = |old: Value, new: Value| -> Vec<String> {
            diff_schemas(&old, &new, Input)
                .into_iter()
                .map(|c| c.detail)
                .collect()
        };
        assert_eq!(
            detail(
                prop(json!({"type": "string"})),
                prop(json!({"type": ["string", "null"]}))
            ),
            [r#"type "string" -> ["string","null"]"#]
        );
        assert_eq!(
            detail(
                json!({"properties": {"path": {}}}),
                json!({"properties": {}})
            ),
            [r#"property "path" removed"#]
        );
        assert_eq!(
            detail(
                json!({"properties": {}}),
                json!({"properties": {"b": {}}, "required": ["b"]})
            ),
            [r#"property "b" added (required)"#]
        );
        assert_eq!(
            detail(
                json!({"properties": {"b": {}}}),
                json!({"properties": {"b": {}}, "required": ["b"]})
            ),
            [r#""b" now required"#]
        );
        assert_eq!(
            detail(
                json!({"properties": {"b": {}}, "required": ["b"]}),
                json!({"properties": {"b": {}}})
            ),
            [r#""b" no longer required"#]
        );
        assert_eq!(
            detail(
                json!({"enum": ["fast", "slow"]}),
                json!({"enum": ["slow", "auto"]})
            ),
            [r#"enum value "fast" removed"#, r#"enum value "auto" added"#]
        );
        assert_eq!(
            detail(json!({"maxLength": 100}), json!({"maxLength": 50})),
            ["maxLength 100 -> 50"]
        );
        assert_eq!(
            detail(json!({}), json!({"minimum": 1})),
            ["minimum (absent) -> 1"]
        );
        assert_eq!(
            detail(
                json!({"additionalProperties": true}),
                json!({"additionalProperties": false})
            ),
            ["additionalProperties true -> false"]
        );
        assert_eq!(
            detail(
                json!({"anyOf": [{"type": "string"}]}),
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
            ),
            [r#"anyOf branch {"type":"null"} added"#]
        );
        assert_eq!(
            detail(json!({"enum": ["a", "b"]}), json!({"enum": ["b", "a"]})),
            ["enum order changed"]
        );
        assert_eq!(
            detail(
                json!({"oneOf": [{"type": "string"}, {"type": "null"}]}),
                json!({"oneOf": [{"type": "null"}, {"type": "string"}]})
            ),
            ["oneOf order changed"]
        );
        assert_eq!(
            detail(
                json!({"type": "string"}),
                json!({"type": "string", "anyOf": [true]})
            ),
            [r#"anyOf (absent) -> [true]"#]
        );
        assert_eq!(
            detail(json!({"$comment": "a"}), json!({"$comment": "b"})),
            [r#"$comment "a" -> "b""#]
        );
        // Long values are cut to 60 characters, the last one "…".
        let long = "x".repeat(100);
        let shown = format!("\"{}…", "x".repeat(58));
        assert_eq!(
            detail(json!({}), json!({"description": long})),
            [format!("description (absent) -> {shown}")]
        );
        assert_eq!(shown.chars().count(), MAX_SHOWN);
        // Keys render sorted.
        assert_eq!(
            detail(
                json!({}),
                json!({"not": {"b": 1, "a": [2, {"d": null, "c": true}]}})
            ),
            [r#"not (absent) -> {"a":[2,{"c":true,"d":null}],"b":1}"#]
        );
    }

    #[test]
    fn walk_order_is_fixed() {
        let old = json!({
            "type": "object",
            "description": "old",
            "properties": {"b": {"type": "string"}, "a": {"type": "string"}, "c": {}},
            "required": ["a"],
            "x-vendor": 1,
        });
        let new = json!({
            "x-vendor": 2,
            "required": ["a", "b"],
            "properties": {"c": {}, "b": {"type": "number"}, "d": {}},
            "description": "new",
            "type": ["object", "null"],
        });
        assert_eq!(
            diff(&old, &new, Input),
            [
                ("input-type-widened", "/type".to_owned()),
                ("input-property-removed", "/properties/a".to_owned()),
                ("input-type-narrowed", "/properties/b/type".to_owned()),
                ("input-optional-added", "/properties/d".to_owned()),
                ("input-required-added", "/required/1".to_owned()),
                ("schema-doc-changed", "/description".to_owned()),
                ("schema-changed", "/x-vendor".to_owned()),
            ]
        );
    }

    #[test]
    fn no_duplicates() {
        // The target and a sibling of one `$ref` report the same change at the same place.
        let old = json!({"properties": {"a": {"$ref": "#/$defs/S", "type": "string"}}, "$defs": {"S": {"type": "string"}}});
        let new = json!({"properties": {"a": {"$ref": "#/$defs/S", "type": "number"}}, "$defs": {"S": {"type": "number"}}});
        assert_eq!(
            diff(&old, &new, Input),
            [("input-type-narrowed", "/properties/a/type".to_owned())]
        );
        // The same change reached from two places is reported at each.
        let old = json!({"allOf": [{"$ref": "#/$defs/S"}, {"$ref": "#/$defs/S"}], "$defs": {"S": {"type": "string"}}});
        let new = json!({"allOf": [{"$ref": "#/$defs/S"}, {"$ref": "#/$defs/S"}], "$defs": {"S": {"type": "number"}}});
        assert_eq!(
            diff(&old, &new, Input),
            [
                ("input-type-narrowed", "/allOf/0/type".to_owned()),
                ("input-type-narrowed", "/allOf/1/type".to_owned()),
            ]
        );
        // A duplicated enum value is one value.
        assert_eq!(
            diff(
                &json!({"enum": ["a", "a", "b"]}),
                &json!({"enum": ["b"]}),
                Input
            ),
            [("input-enum-value-removed", "/enum/0".to_owned())]
        );
    }

    #[test]
    fn every_code_is_in_the_catalog() {
        use Kind::*;
        for kind in [
            PropertyRemoved,
            OptionalPropertyAdded,
            RequiredPropertyAdded,
            RequiredAdded,
            RequiredRemoved,
            TypeNarrowed,
            TypeWidened,
            TypeChanged,
            EnumValueRemoved,
            EnumValueAdded,
            Tightened,
            Loosened,
            Closed,
            Opened,
            Doc,
            Reordered,
            Other,
        ] {
            for direction in [Input, Output] {
                let name = kind.code(direction);
                assert!(crate::codes::code(name).is_some(), "{name} is not a code");
            }
        }
    }

    #[test]
    fn large_and_exponential_schemas_stay_fast() {
        // 5,000 properties, one changed: equal subtrees short-circuit.
        let wide = |t: &str| {
            let mut properties = Map::new();
            for i in 0..5000 {
                properties.insert(
                    format!("p{i:04}"),
                    json!({"type": "string", "maxLength": i}),
                );
            }
            properties.insert("p2500".to_owned(), json!({"type": t}));
            json!({"type": "object", "properties": properties})
        };
        assert_eq!(
            diff(&wide("string"), &wide("number"), Input),
            [("input-type-narrowed", "/properties/p2500/type".to_owned())]
        );
        // Each $defs entry uses the next twice: 2^40 paths reach the change at the bottom.
        let fan = |t: &str| {
            let mut defs = Map::new();
            for i in 0..40 {
                let next = format!("#/$defs/d{}", i + 1);
                defs.insert(
                    format!("d{i}"),
                    json!({"properties": {"l": {"$ref": next}, "r": {"$ref": next}}}),
                );
            }
            defs.insert("d40".to_owned(), json!({"type": t}));
            json!({"$ref": "#/$defs/d0", "$defs": defs})
        };
        let changes = diff_schemas(&fan("string"), &fan("number"), Input);
        assert!(changes.iter().any(|c| c.code == "input-type-narrowed"));
        let limited = |c: &SchemaChange| c.detail.contains("expansion limit");
        assert_eq!(changes.iter().filter(|c| limited(c)).count(), 1);
        assert!(changes.len() <= MAX_FOLLOWS + 1);
        // A chain of 1,000 refs stops at the depth limit instead of overflowing the stack.
        let chain = |t: &str| {
            let mut defs = Map::new();
            for i in 0..1000 {
                let next = format!("#/$defs/d{}", i + 1);
                defs.insert(
                    format!("d{i}"),
                    json!({"properties": {"x": {"$ref": next}}}),
                );
            }
            defs.insert("d1000".to_owned(), json!({"type": t}));
            json!({"$ref": "#/$defs/d0", "$defs": defs})
        };
        let changes = diff(&chain("string"), &chain("number"), Output);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0, "schema-changed");
        assert!(changes[0].1.starts_with("/properties/x/properties/x/"));
    }
}

//! What a capability declares of itself, so that loading, `inspect` and the
//! store read it from one list ([`super::CAPABILITIES`]) rather than each
//! knowing every interface: its name, the WIT interfaces it provides, and the
//! grant a plugin importing it must hold (the policy key, an example value, the
//! CLI flag, and the refusal's words). The per-call side is the capability's
//! `link` (its views over [`super::CallAccess`]).

/// One capability the host provides to plugins.
#[derive(Debug)]
pub(crate) struct Capability {
    /// Its name, as `inspect` reports what a component requests.
    pub(crate) name: &'static str,
    /// The interfaces it provides: a name ending in `/` is a package prefix,
    /// any other is one interface at any version (`name` or `name@…`).
    pub(crate) interfaces: &'static [&'static str],
    /// What a plugin that imports it must be granted (`None`: nothing, or the
    /// call's state decides, as for the filesystem's preopens).
    pub(crate) needs: Option<Need>,
}

/// A grant a capability needs, and how a refusal tells the user to give it.
#[derive(Debug)]
pub(crate) struct Need {
    /// The grant's policy key (`plugins.NAME.KEY`), also how the load-time
    /// check asks the plugin's grants whether they hold it.
    pub(crate) key: &'static str,
    /// An example value of the key, for the refusal.
    pub(crate) example: &'static str,
    /// The CLI flag that grants it to an ad-hoc plugin (or what else does).
    pub(crate) flag: &'static str,
    /// The refusal, with `{how}` where the way to grant it goes.
    pub(crate) refusal: &'static str,
}

impl Need {
    /// The refusal's words, with `how` (the way to grant it, for this plugin's source).
    pub(crate) fn refusal(&self, how: &str) -> String {
        self.refusal.replace("{how}", how)
    }
}

impl Capability {
    /// Whether `import` is one of its interfaces.
    pub(crate) fn provides(&self, import: &str) -> bool {
        self.narrowness(import).is_some()
    }

    /// Whether any of `imports` is one of its interfaces.
    pub(crate) fn imported_by(&self, imports: &[String]) -> bool {
        imports.iter().any(|import| self.provides(import))
    }
}

/// The capability that provides `import`: of those in `list` that do, the one
/// naming it most narrowly (an interface before a package prefix, a longer
/// prefix before a shorter), so the list's order is free.
pub(crate) fn providing<'a>(list: &[&'a Capability], import: &str) -> Option<&'a Capability> {
    list.iter()
        .copied()
        .filter_map(|capability| Some((capability.narrowness(import)?, capability)))
        .max_by_key(|(n, _)| *n)
        .map(|(_, c)| c)
}

impl Capability {
    /// How narrowly it names `import`, if it provides it: an interface ranks
    /// above every prefix, a prefix by its length.
    fn narrowness(&self, import: &str) -> Option<usize> {
        self.interfaces
            .iter()
            .filter_map(|interface| match interface.ends_with('/') {
                true => import.starts_with(interface).then_some(interface.len()),
                false => import
                    .strip_prefix(interface)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
                    .then_some(usize::MAX),
            })
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXACT: Capability = Capability { name: "x", interfaces: &["a:b/c"], needs: None };
    const PREFIX: Capability = Capability { name: "y", interfaces: &["a:b/"], needs: None };

    #[test]
    fn an_interface_matches_at_any_version_and_a_prefix_its_package() {
        assert!(EXACT.provides("a:b/c") && EXACT.provides("a:b/c@0.2.0"));
        assert!(!EXACT.provides("a:b/cd") && !EXACT.provides("a:b/c-d@0.1.0") && !EXACT.provides("x:a:b/c"));
        assert!(PREFIX.provides("a:b/anything@1.0.0") && !PREFIX.provides("a:bc/d"));
        assert_eq!(providing(&[&EXACT, &PREFIX], "a:b/c@1").map(|c| c.name), Some("x"));
        assert_eq!(providing(&[&PREFIX, &EXACT], "a:b/c@1").map(|c| c.name), Some("x"), "whatever the order");
        assert_eq!(providing(&[&EXACT, &PREFIX], "a:b/d").map(|c| c.name), Some("y"));
        assert!(providing(&[&EXACT, &PREFIX], "wasi:http/types").is_none());
    }
}

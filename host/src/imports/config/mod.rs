//! `wasi:config/store`, in both versions components import (`0.2.0-draft` and
//! `0.2.0-rc.1`): the values of the plugin's policy entry (`config = { KEY = "value",
//! KEY2 = { env = "NAME" } }`), resolved once at load, never the host's environment
//! unless an entry names a variable. A plugin may import the interface only when its
//! entry grants some config (checked at load); a call of a plugin that does not import it
//! holds no values. The grant, and how the policy's `config` table is read and
//! resolved: [`grant`].

mod grant;

use std::sync::Arc;

use wasmtime::component::{HasData, Linker};

use super::CallStore;
use super::capability::{Capability, Need};
pub use grant::{ConfigSource, ConfigValue};
pub(crate) use grant::{check_key, resolve};

/// Granted only to a plugin whose entry has `config`.
pub(crate) const CAPABILITY: Capability = Capability {
    name: "config",
    interfaces: &["wasi:config/store"],
    needs: Some(Need {
        key: "config",
        example: "{ KEY = \"value\", KEY2 = { env = \"NAME\" } }",
        flag: "a policy entry",
        refusal: "no config values are granted to this plugin (grant some with {how})",
    }),
};

/// The two versions of the interface, one bindgen each (same shape).
mod draft {
    wasmtime::component::bindgen!({
        inline: "
            package wasi:config@0.2.0-draft;
            interface store {
                variant error { upstream(string), io(string) }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }
            world imports { import store; }
        ",
        world: "imports",
    });
}

mod rc1 {
    wasmtime::component::bindgen!({
        inline: "
            package wasi:config@0.2.0-rc.1;
            interface store {
                variant error { upstream(string), io(string) }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }
            world imports { import store; }
        ",
        world: "imports",
    });
}

use draft::wasi::config::store as draft_store;
use rc1::wasi::config::store as rc1_store;

/// The values one call may read: the plugin's config, resolved at load.
pub(crate) type ConfigValues = Arc<[(String, String)]>;

/// What the config import works on: the call's values (`None`: it has none).
pub(crate) struct ConfigView<'a> {
    /// The plugin's values.
    pub values: Option<&'a ConfigValues>,
}

impl ConfigView<'_> {
    fn get(&self, key: &str) -> Option<String> {
        self.values?.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn all(&self) -> Vec<(String, String)> {
        self.values.map(|v| v.to_vec()).unwrap_or_default()
    }
}

struct HasConfig;

impl HasData for HasConfig {
    type Data<'a> = ConfigView<'a>;
}

impl draft_store::Host for ConfigView<'_> {
    fn get(&mut self, key: String) -> Result<Option<String>, draft_store::Error> {
        Ok(ConfigView::get(self, &key))
    }

    fn get_all(&mut self) -> Result<Vec<(String, String)>, draft_store::Error> {
        Ok(self.all())
    }
}

impl rc1_store::Host for ConfigView<'_> {
    fn get(&mut self, key: String) -> Result<Option<String>, rc1_store::Error> {
        Ok(ConfigView::get(self, &key))
    }

    fn get_all(&mut self) -> Result<Vec<(String, String)>, rc1_store::Error> {
        Ok(self.all())
    }
}

/// Link `wasi:config/store` in both versions, reaching each store's values through `get`.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    fn get<T: CallStore>(store: &mut T) -> ConfigView<'_> {
        ConfigView { values: Some(&store.parts().access.config) }
    }
    let get: fn(&mut T) -> ConfigView<'_> = get::<T>;
    draft_store::add_to_linker::<T, HasConfig>(linker, get)?;
    rc1_store::add_to_linker::<T, HasConfig>(linker, get)?;
    Ok(())
}

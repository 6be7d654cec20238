//! A typed-export component: no `toolhost:plugin`, only exported WIT functions, the
//! way components for MCP-oriented wasm hosts are written. Its WIT (`wit/typed.wit`)
//! has doc comments; the tests' build script adds them as a `package-docs` section.

// The generated glue exports the functions (`export_name`, `unsafe`): only here.
#[allow(missing_docs, unreachable_pub, unsafe_code)]
mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "typed" });
}

use bindings::exports::toolhost_test::typed::counters::GuestCounter as _;
use bindings::exports::toolhost_test::typed::{counters, kinds, weather};

struct Typed;

impl bindings::Guest for Typed {
    fn echo(text: String) -> String {
        text
    }

    fn read_file(path: String) -> String {
        format!("not a file reader: {path}")
    }

    fn spin() {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn flood(n: u32) -> Vec<u8> {
        vec![7u8; n as usize]
    }

    fn hog() -> u64 {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        loop {
            kept.push(vec![1u8; 1 << 20]);
            std::hint::black_box(&kept);
        }
    }
}

impl weather::Guest for Typed {
    fn get_weather(
        location: weather::Location,
        units: Option<weather::Units>,
        extras: weather::Extras,
    ) -> Result<weather::Report, String> {
        if !(-90.0..=90.0).contains(&location.lat) {
            return Err(format!("latitude {} is not between -90 and 90", location.lat));
        }
        let units = units.unwrap_or(weather::Units::Metric);
        let celsius = 20.0 - (location.lat.abs() as f32) / 5.0;
        let temperature = match units {
            weather::Units::Metric => celsius,
            weather::Units::Imperial => celsius * 9.0 / 5.0 + 32.0,
        };
        let place = location.name.unwrap_or_else(|| format!("{},{}", location.lat, location.lon));
        Ok(weather::Report { place, temperature, units, extras, notes: vec!["made up".into()] })
    }

    fn echo(text: String) -> String {
        format!("weather: {text}")
    }
}

impl kinds::Guest for Typed {
    fn mirror(value: kinds::Everything) -> kinds::Everything {
        value
    }

    fn area(shape: kinds::Shape) -> f64 {
        match shape {
            kinds::Shape::Circle(r) => std::f64::consts::PI * r * r,
            kinds::Shape::Rect((w, h)) => w * h,
            kinds::Shape::Point => 0.0,
        }
    }

    fn swap(pair: (String, u32)) -> (u32, String) {
        (pair.1, pair.0)
    }

    fn halve(n: u32) -> Result<u32, kinds::Problem> {
        if n.is_multiple_of(2) {
            Ok(n / 2)
        } else {
            Err(kinds::Problem { code: 7, reason: format!("{n} is odd") })
        }
    }

    fn nothing() {}
}

struct Counter(std::cell::Cell<u32>);

impl counters::GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Counter(std::cell::Cell::new(start))
    }

    fn get(&self) -> u32 {
        self.0.get()
    }
}

impl counters::Guest for Typed {
    type Counter = Counter;

    fn make(start: u32) -> counters::Counter {
        counters::Counter::new(Counter(std::cell::Cell::new(start)))
    }

    fn read(c: counters::CounterBorrow<'_>) -> u32 {
        c.get::<Counter>().get()
    }

    fn version() -> String {
        "1".into()
    }
}

#[allow(unsafe_code)]
mod export {
    use super::{Typed, bindings};
    bindings::export!(Typed with_types_in bindings);
}

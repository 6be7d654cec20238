// `weather`: a typed-export component written in JavaScript. It does not use
// the toolhost contract: it exports WIT functions (see `wit/weather.wit`), and
// toolhost makes each of them a tool, with the argument schema derived from
// the WIT types.
//
// Built with componentize-js by `scripts/examples`. Records arrive as objects,
// enums as strings, an absent `option` as `undefined`, variants as
// `{ tag, val }`; returning a value is `ok`, throwing a string is `err`.

export const forecast = {
  getWeather(location, units, tags) {
    if (location.lat < -90 || location.lat > 90) {
      throw `latitude ${location.lat} is not between -90 and 90`;
    }
    const chosen = units ?? 'metric';
    const celsius = 20 - Math.abs(location.lat) / 5;
    const temperature = chosen === 'imperial' ? (celsius * 9) / 5 + 32 : celsius;
    const sky =
      location.lon > 0 ? { tag: 'cloudy', val: 40 } : location.lon < 0 ? { tag: 'rain', val: 2.5 } : { tag: 'clear' };
    return { place: `${location.lat},${location.lon}`, temperature, units: chosen, sky, tags };
  },
};

export function shout(text) {
  return text.toUpperCase();
}

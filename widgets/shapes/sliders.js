// The sliders, the one place their steps and positions are worked out. Each steps through the values listed
// in its data-values: powers of two for d_model, n and B (sizes that span orders of magnitude, listed by
// widget.py), the divisors of d_model for h, up to its data-max-step. The number field beside each takes any
// value; the slider then sits at the nearest step and still announces the field's value. A slider is shown
// once placed (data-placed): the page is rendered without positions, which mount sets before Python starts.

const steps = (slider) => slider.dataset.values.split(",").map(Number);

/** The value the slider's position stands for. */
export const sliderValue = (slider) => steps(slider)[slider.valueAsNumber];

/** Move slider to the step nearest value on a log scale. */
function place(slider, value) {
  const values = steps(slider);
  let best = 0;
  values.forEach((v, i) => {
    if (Math.abs(Math.log2(v / value)) < Math.abs(Math.log2(values[best] / value))) best = i;
  });
  if (slider.value !== String(best)) slider.value = String(best);
  slider.setAttribute("aria-valuetext", String(value));
}

/** A slider whose steps are the divisors of another field's value (h's: d_model's), up to its data-max-step. */
function setDivisorSteps(slider, of) {
  const divisors = [];
  for (let d = 1; d <= Math.min(of, Number(slider.dataset.maxStep)); d++) if (of % d === 0) divisors.push(d);
  const values = divisors.join(",");
  if (slider.dataset.values !== values) slider.dataset.values = values;
}

/** Put every slider where config (the form as readConfig read it) says. A field that holds no size it can take
 * is not in config: its slider stays where it was (a size past the field's max is refused in words, not clipped
 * to the slider's end). */
export function syncSliders(form, config) {
  for (const slider of form.querySelectorAll('input[type="range"]')) {
    const of = slider.dataset.divisorsOf && config[slider.dataset.divisorsOf];
    if (of) setDivisorSteps(slider, of);
    if (!slider.dataset.values) continue; // h, while d_model's field holds no whole number at mount
    const max = String(steps(slider).length - 1);
    if (slider.max !== max) slider.max = max;
    const value = config[slider.name];
    if (value) place(slider, value);
    if (!("placed" in slider.dataset)) slider.dataset.placed = ""; // an attribute write restyles, even unchanged
  }
}

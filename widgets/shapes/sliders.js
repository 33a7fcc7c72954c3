// The sliders. Each steps through the values listed in its data-values: powers of two for d_model, n and
// B (sizes that span orders of magnitude), the divisors of d_model for h. The number field beside each
// takes any value; the slider then sits at the nearest step and still announces the field's value.
// The page is rendered with the steps and positions widget.py computes; here they follow the reader's edits,
// with h's cap read from the slider (data-max-step), as widget.py set it.
import { wholeNumber } from "../shared/numbers.js";

const steps = (slider) => slider.dataset.values.split(",").map(Number);

/** The value the slider's position stands for. */
export const sliderValue = (slider) => steps(slider)[slider.valueAsNumber];

/** Move slider to the step nearest value on a log scale (widget.py: nearest_index). */
function place(slider, value) {
  const values = steps(slider);
  let best = 0;
  values.forEach((v, i) => {
    if (Math.abs(Math.log2(v / value)) < Math.abs(Math.log2(values[best] / value))) best = i;
  });
  if (slider.value !== String(best)) slider.value = String(best);
  slider.setAttribute("aria-valuetext", String(value));
}

/** A slider whose steps are the divisors of another field's value (h's: d_model's), up to its data-max-step
 * (widget.py: head_steps). */
function setDivisorSteps(slider, of) {
  const divisors = [];
  for (let d = 1; d <= Math.min(of, Number(slider.dataset.maxStep)); d++) if (of % d === 0) divisors.push(d);
  const values = divisors.join(",");
  if (slider.dataset.values === values) return;
  slider.dataset.values = values;
  slider.max = String(divisors.length - 1);
}

/** A field's whole number, or null while it holds anything else (the slider then stays where it was). */
const fieldValue = (form, name) => wholeNumber(form.querySelector(`input[type="number"][name="${name}"]`).value) || null;

/** Put every slider where its number field says. */
export function syncSliders(form) {
  for (const slider of form.querySelectorAll('input[type="range"]')) {
    const of = slider.dataset.divisorsOf && fieldValue(form, slider.dataset.divisorsOf);
    if (of) setDivisorSteps(slider, of);
    const value = fieldValue(form, slider.name);
    if (value) place(slider, value);
  }
}

// The sliders. Each steps through the values listed in its data-values: powers of two for d_model, n and
// B (sizes that span orders of magnitude), the divisors of d_model for h. The number field beside each
// takes any value; the slider then sits at the nearest step and still announces the field's value.
const MAX_HEADS = 128; // widget.py's MAX_SLIDER_HEADS

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

/** h's steps: the divisors of dModel up to MAX_HEADS (widget.py: head_steps). */
function setHeadSteps(slider, dModel) {
  const divisors = [];
  for (let d = 1; d <= Math.min(dModel, MAX_HEADS); d++) if (dModel % d === 0) divisors.push(d);
  const values = divisors.join(",");
  if (slider.dataset.values === values) return;
  slider.dataset.values = values;
  slider.max = String(divisors.length - 1);
}

/** A field's whole number, or null while it holds anything else (the slider then stays where it was). */
function wholeValue(form, name) {
  const text = form.querySelector(`input[type="number"][name="${name}"]`).value.trim();
  return /^[1-9]\d{0,15}$/.test(text) ? Number(text) : null;
}

/** Put every slider where its number field says. */
export function syncSliders(form) {
  const dModel = wholeValue(form, "d_model");
  for (const slider of form.querySelectorAll('input[type="range"]')) {
    const value = wholeValue(form, slider.name);
    if (slider.name === "n_heads" && dModel) setHeadSteps(slider, dModel);
    if (value) place(slider, value);
  }
}

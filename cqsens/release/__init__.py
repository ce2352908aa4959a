"""Released statistics: aggregate rules over the count bound, value bounds, noise calibration."""

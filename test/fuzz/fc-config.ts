/**
 * fast-check settings for the fuzz arbitraries; imported before any arbitrary is built. By
 * default fast-check keeps generated lengths near 10 even when a larger maxLength is given; a
 * fuzzer wants the whole range up to the stated maximum.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), defaultSizeToMaxWhenMaxSpecified: true });

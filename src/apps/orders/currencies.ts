/**
 * ISO 4217 "List One" alphabetic codes (current currencies, funds, precious metals and the X codes),
 * as published by the ISO 4217 maintenance agency (SIX) in 2025. A fixed list rather than ICU's
 * (Intl.supportedValuesOf) so that the accepted set does not change with the Node build. Codes are
 * upper case; `usd` is refused rather than silently rewritten.
 */
const CODES = `
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN
BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP
GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF
KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR
MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK
SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU
UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX
YER ZAR ZMW ZWG`;

export const ISO_4217_CODES: ReadonlySet<string> = new Set(CODES.trim().split(/\s+/));

export function isIso4217(code: string): boolean {
  return ISO_4217_CODES.has(code);
}

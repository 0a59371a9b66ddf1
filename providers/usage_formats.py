"""One reader per billing-export format: a batch of the export's columns -> the canonical row frame
(``providers.usage_columns.canon_frame``): FOCUS 1.0-1.2, AWS CUR 2.0, Azure cost details, and the warehouse's
``hourly`` table. ``providers.usage``'s module doc gives the rules of each; ``providers.usage.read_usage`` keeps the
GPU rows and aggregates them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from providers.usage_columns import (Problems, ReadContext, add_ids, as_object, canon_frame, map_pairs, map_unique,
                                     num_col, text_col, time_col, window_why)
from providers.usage_names import (AWS_USAGE_RE, AZ_GPU_SERIES_RE, AZ_SIZE_RE, GPU_WORD_RE,
                                   aws_type_from_usage_type, azure_region, azure_size_from_meter, focus_desc_type,
                                   hour_block, json_instance_type, provider_name)
from providers.usage_source import Source

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

_CHARGE_CATEGORIES = {"usage": "Usage", "purchase": "Purchase", "tax": "Tax", "credit": "Credit",
                      "adjustment": "Adjustment"}
_PRICING_CATEGORIES_IN = {"standard": "Standard", "on-demand": "Standard", "committed": "Committed",
                          "commitment-based": "Committed", "dynamic": "Dynamic", "other": "Other"}
_CHARGE_FREQ = {"usage-based": "Usage-Based", "one-time": "One-Time", "recurring": "Recurring"}
_CD_STATUS = {"used": "Used", "unused": "Unused"}
_CHARGE_CLASS = {"correction": "Correction"}


def focus_batch(df: "pd.DataFrame", src: Source, ctx: ReadContext) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    """FOCUS 1.0-1.2 rows -> canonical rows (instance type from the strongest source first; hours from
    ConsumedQuantity in hour units, else PricingQuantity times the hour block; ChargeCategory, PricingCategory,
    CommitmentDiscountStatus and ChargeClass compared case-insensitively). Returns (frame, []): the problems of each
    row are in its ``problem`` column."""
    import pandas as pd

    C = src.col
    prov = map_unique(text_col(df, C("ProviderName")), provider_name)
    region = as_object(text_col(df, C("RegionId")))
    desc_c = text_col(df, C("ChargeDescription"))
    desc = as_object(desc_c)
    # instance type, strongest source first
    itype = pd.Series([""] * len(df), index=df.index, dtype=object)
    for name, fn in (("x_InstanceType", str), ("x_instance_type", str), ("x_VmSize", str), ("x_MachineType", str),
                     ("x_ArmSkuName", str), ("x_UsageType", aws_type_from_usage_type),
                     ("x_SkuMeterName", azure_size_from_meter), ("SkuPriceDetails", json_instance_type),
                     ("x_SkuDetails", json_instance_type)):
        c = C(name)
        if c is None:
            continue
        v = map_unique(text_col(df, c), lambda x, fn=fn: fn(x) if x else "")
        itype = itype.where(itype != "", v)
    dt = map_pairs(desc_c, prov, focus_desc_type)
    d_type = dt.map(lambda x: x[0])
    hint = dt.map(lambda x: x[1]).astype(bool)
    itype = itype.where(itype != "", d_type)
    strong = itype != ""
    known = prov.isin(["aws", "azure", "gcp", "oracle", "lambda"])
    for c in (C("SkuId"), C("ResourceId")):
        if c is not None:
            weak = as_object(text_col(df, c))
            itype = itype.where((itype != "") | known, weak)
    # enums
    cc = ctx.casing.norm(text_col(df, C("ChargeCategory")), "ChargeCategory", _CHARGE_CATEGORIES)
    ctx.casing.norm(text_col(df, C("ChargeFrequency")), "ChargeFrequency", _CHARGE_FREQ)
    pc_ = ctx.casing.norm(text_col(df, C("PricingCategory")), "PricingCategory", _PRICING_CATEGORIES_IN)
    st = ctx.casing.norm(text_col(df, C("CommitmentDiscountStatus")), "CommitmentDiscountStatus", _CD_STATUS)
    cls = ctx.casing.norm(text_col(df, C("ChargeClass")), "ChargeClass", _CHARGE_CLASS)
    cid = as_object(text_col(df, C("CommitmentDiscountId")))
    pcat = as_object(pc_).map(lambda x: {"standard": "Standard", "on-demand": "Standard", "committed": "Committed",
                              "commitment-based": "Committed", "dynamic": "Dynamic"}.get(x, "")).astype(object)
    pcat = pcat.where((pcat != "") | (cid == "") | (st != "used"), "Committed")
    kind = as_object(cc).map({"usage": "usage", "purchase": "purchase", "credit": "credit", "adjustment": "adjustment",
                   "tax": "skip"}).astype(object)
    kind = kind.where(~((kind == "usage") & (st == "unused")), "unused")
    kind = kind.where(~((cls == "correction") & (kind == "usage")), "adjustment")
    # numbers
    billed, b_bad = num_col(df, C("BilledCost"))
    eff, e_bad = num_col(df, C("EffectiveCost"))
    lst, l_bad = num_col(df, C("ListCost"))
    lup, _ = num_col(df, C("ListUnitPrice"))  # only where ListCost is empty; a bad one is no list price
    cq, cq_bad = num_col(df, C("ConsumedQuantity"))
    pq_, pq_bad = num_col(df, C("PricingQuantity"))
    cu = text_col(df, C("ConsumedUnit"))
    pu = text_col(df, C("PricingUnit"))
    cblock = map_unique(cu, hour_block, dtype=float).astype(float)
    pblock = map_unique(pu, hour_block, dtype=float).astype(float)
    hours = (cq * cblock).where(cq.notna() & cblock.notna(), pq_ * pblock)
    # the list price of the line: ListCost, else ListUnitPrice x PricingQuantity (the spec's identity). A list price
    # that is not a number, or below 0 on a usage row, is no list price (the line's baseline falls back to the
    # catalog, said per line): never a reason to drop the row's usage and billed cost (a breaker's export lost 99 %
    # of its spend to ListCost "abc")
    lst = lst.where(lst.notna(), lup * pq_)
    unusable = l_bad | ((kind == "usage") & (lst < 0)).to_numpy()
    if unusable.any():
        ctx.counts["list_unusable"] += int(unusable.sum())
        lst = lst.where(~unusable)
    # rows priced per 10,000 units: PricingQuantity = ConsumedQuantity / 10,000 with a plain PricingUnit
    ratio = cq / pq_.where(pq_ != 0)
    per10k = ratio.round(6).isin([10000.0]) & (cq != 0)
    if per10k.any():
        ctx.counts["per10k"] += int(per10k.sum())
    blocks = pblock.where(cq.isna() & pq_.notna() & (pblock > 1))
    if blocks.notna().any():
        ctx.counts["hour_blocks"] += int(blocks.notna().sum())
    cur = text_col(df, C("BillingCurrency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("BillingCurrency") is None:
        ctx.counts["no_currency"] += len(df)
    start, s_bad, s_far = time_col(df, C("ChargePeriodStart"))
    end, e2_bad, e2_far = time_col(df, C("ChargePeriodEnd"))
    if C("EffectiveCost") is None:
        ctx.counts["no_effective_col"] += len(df)
    # unknown charge category
    unknown_cc = (cc != "") & kind.isna()
    kind = kind.fillna("bad_cc").astype(object)
    kind = kind.where(cc != "", "bad_cc")
    bad: list[tuple[int, str]] = []
    frame = canon_frame(df.index, provider=prov, region=region, itype=itype, strong=strong, hint=hint, start=start,
                        end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid, kind=kind,
                        desc=desc)
    frame["res"] = text_col(df, C("ResourceId"))
    frame["pq"] = pq_
    sub = as_object(text_col(df, C("SubAccountId")))
    frame["account"] = sub.where(sub != "", as_object(text_col(df, C("BillingAccountId"))))
    frame["covers"] = (cc == "usage").to_numpy()
    add_ids(frame, df, src, "focus")
    pr = Problems(df.index)
    for mask, why in ((s_bad, "ChargePeriodStart does not parse"), (e2_bad, "ChargePeriodEnd does not parse"),
                      (s_far, window_why("ChargePeriodStart")), (e2_far, window_why("ChargePeriodEnd")),
                      (b_bad, "BilledCost is not a number"), (e_bad, "EffectiveCost is not a number"),
                      (cq_bad, "ConsumedQuantity is not a number"), (pq_bad, "PricingQuantity is not a number")):
        pr.add(mask, why)
    if unknown_cc.any():
        pr.add(unknown_cc, "ChargeCategory " + as_object(text_col(df, C("ChargeCategory"))) + " is not a FOCUS value")
    pr.add(cc == "", "ChargeCategory is empty")
    frame["problem"] = pr.why
    return frame, bad


CUR_COLUMNS = ("line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date",
             "line_item_usage_amount", "line_item_unblended_cost", "line_item_usage_type", "line_item_currency_code",
             "line_item_line_item_description", "line_item_product_code", "line_item_availability_zone",
             "product_instance_type", "product_region_code", "product_instance_family", "product", "pricing_term",
             "pricing_unit", "pricing_public_on_demand_cost", "pricing_public_on_demand_rate", "pricing_currency",
             "reservation_reservation_a_r_n",
             "reservation_effective_cost", "reservation_unused_amortized_upfront_fee_for_billing_period",
             "reservation_unused_recurring_fee", "savings_plan_savings_plan_a_r_n",
             "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
             "savings_plan_used_commitment", "bill_payer_account_id", "bill_payer_account_name",
             "line_item_usage_account_id", "line_item_usage_account_name", "line_item_resource_id", "product_sku",
             "pricing_rate_id")
_CUR_TYPES = {"usage": "Usage", "discountedusage": "DiscountedUsage", "savingsplancoveredusage":
              "SavingsPlanCoveredUsage", "savingsplannegation": "SavingsPlanNegation", "rifee": "RIFee",
              "fee": "Fee", "savingsplanrecurringfee": "SavingsPlanRecurringFee", "savingsplanupfrontfee":
              "SavingsPlanUpfrontFee", "refund": "Refund", "credit": "Credit", "tax": "Tax", "edpdiscount":
              "EdpDiscount", "bundleddiscount": "BundledDiscount", "privateratediscount": "PrivateRateDiscount",
              "distributordiscount": "DistributorDiscount", "savingsplanrecurringfeenegation": "", }


def _cur_batch(df: "pd.DataFrame", src: Source, ctx: ReadContext) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import numpy as np
    import pandas as pd

    C = src.col
    lit = ctx.casing.norm(text_col(df, C("line_item_line_item_type")), "line_item_line_item_type",
                          {k: v for k, v in _CUR_TYPES.items() if v})
    ut = text_col(df, C("line_item_usage_type"))
    itype = as_object(text_col(df, C("product_instance_type")))
    if "product.instance_type" in df.columns:
        itype = itype.where(itype != "", as_object(text_col(df, "product.instance_type")))
    elif C("product") is not None and C("product_instance_type") is None:
        itype = map_unique(text_col(df, C("product")), lambda x: json_instance_type(x) if x else "")
    itype = itype.where(itype != "", map_unique(ut, aws_type_from_usage_type))
    region = as_object(text_col(df, C("product_region_code")))
    if "product.region_code" in df.columns:
        region = region.where(region != "", as_object(text_col(df, "product.region_code")))
    az = map_unique(text_col(df, C("line_item_availability_zone")), lambda x: re.sub(r"[a-z]$", "", x))
    region = region.where(region != "", az)
    fam = text_col(df, C("product_instance_family"))
    term = ctx.casing.norm(text_col(df, C("pricing_term")), "pricing_term", {"ondemand": "OnDemand",
                                                                         "reserved": "Reserved", "spot": "Spot"})
    unit = text_col(df, C("pricing_unit"))
    box = map_unique(ut, lambda x: bool(AWS_USAGE_RE.search(x)) if x else False, dtype=bool).astype(bool)
    is_hours = map_unique(unit, lambda x: x.lower() in ("hrs", "hours", "hour", "hr"), dtype=bool).astype(bool)
    inst_usage = box | ((C("line_item_usage_type") is None) & is_hours & (itype != ""))
    amount, a_bad = num_col(df, C("line_item_usage_amount"))
    unbl, u_bad = num_col(df, C("line_item_unblended_cost"))
    ri_eff, r_bad = num_col(df, C("reservation_effective_cost"))
    sp_eff, p_bad = num_col(df, C("savings_plan_savings_plan_effective_cost"))
    pub, _ = num_col(df, C("pricing_public_on_demand_cost"))
    pub_rate, _ = num_col(df, C("pricing_public_on_demand_rate"))
    pub = pub.where(pub.notna(), pub_rate * amount)  # the public on-demand rate x the hours, where the cost is absent
    ri_unused_up, _ = num_col(df, C("reservation_unused_amortized_upfront_fee_for_billing_period"))
    ri_unused_rec, _ = num_col(df, C("reservation_unused_recurring_fee"))
    sp_total, _ = num_col(df, C("savings_plan_total_commitment_to_date"))
    sp_used, _ = num_col(df, C("savings_plan_used_commitment"))
    ri_arn = as_object(text_col(df, C("reservation_reservation_a_r_n")))
    sp_arn = as_object(text_col(df, C("savings_plan_savings_plan_a_r_n")))
    cur = text_col(df, C("line_item_currency_code"))
    if C("line_item_currency_code") is None:
        cur = text_col(df, C("pricing_currency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("line_item_currency_code") is None and C("pricing_currency") is None:
        ctx.counts["no_currency"] += len(df)
    start, s_bad, s_far = time_col(df, C("line_item_usage_start_date"))
    end, e_bad, e_far = time_col(df, C("line_item_usage_end_date"))
    desc = as_object(text_col(df, C("line_item_line_item_description")))

    kind = pd.Series("skip", index=df.index, dtype=object)
    pcat = pd.Series("", index=df.index, dtype=object)
    cid = pd.Series("", index=df.index, dtype=object)
    billed = unbl.copy()
    eff = unbl.copy()
    hours = pd.Series(np.nan, index=df.index)
    spot = (term == "spot") | map_unique(ut, lambda x: "SpotUsage" in x, dtype=bool).astype(bool)
    u = (lit == "usage") & inst_usage
    kind[u] = "usage"
    pcat[u] = np.where(spot[u], "Dynamic", "Standard")
    hours[u] = amount[u]
    d = (lit == "discountedusage") & inst_usage
    kind[d] = "usage"
    pcat[d] = "Committed"
    cid[d] = ri_arn[d]
    billed[d] = 0.0
    eff[d] = ri_eff[d]
    hours[d] = amount[d]
    s = (lit == "savingsplancoveredusage") & inst_usage
    kind[s] = "usage"
    pcat[s] = "Committed"
    cid[s] = sp_arn[s]
    billed[s] = 0.0  # the SavingsPlanNegation line cancels the unblended cost; the commitment fee is billed
    eff[s] = sp_eff[s]
    hours[s] = amount[s]
    if s.any():
        ctx.counts["sp_covered"] += int(s.sum())
    neg = lit == "savingsplannegation"
    if neg.any():
        ctx.counts["sp_negation"] += int(neg.sum())
    fee = lit.isin(["rifee", "savingsplanrecurringfee", "savingsplanupfrontfee"]) | \
        ((lit == "fee") & ((ri_arn != "") | (sp_arn != "")))
    kind[fee] = "purchase"
    cid[fee] = ri_arn[fee].where(ri_arn[fee] != "", sp_arn[fee])
    eff[fee] = 0.0
    ref = lit == "refund"
    kind[ref] = "adjustment"
    cred = lit.isin(["credit", "edpdiscount", "bundleddiscount", "privateratediscount", "distributordiscount"])
    kind[cred] = "credit"
    cid[ref | cred] = ri_arn[ref | cred].where(ri_arn[ref | cred] != "", sp_arn[ref | cred])
    unknown = (lit != "") & ~lit.isin(list(_CUR_TYPES))
    lst = pub.where(kind == "usage")
    hint = map_unique(fam, lambda x: "gpu" in x.lower(), dtype=bool).astype(bool) & (itype == "") & inst_usage
    frame = canon_frame(df.index, provider="aws", region=region, itype=itype, strong=itype != "", hint=hint,
                        start=start, end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid,
                        kind=kind, desc=desc)
    acct = as_object(text_col(df, C("line_item_usage_account_id")))
    frame["account"] = acct.where(acct != "", as_object(text_col(df, C("bill_payer_account_id"))))
    frame["covers"] = lit.isin(["usage", "discountedusage", "savingsplancoveredusage"]).to_numpy()
    add_ids(frame, df, src, "aws-cur-2.0")
    # unused commitment on the fee lines (CUR puts it there, FOCUS on a separate row)
    extra = []
    ri_unused = ri_unused_up.fillna(0) + ri_unused_rec.fillna(0)
    m = (lit == "rifee") & (ri_unused > 0)
    if m.any():
        x = frame[m].copy()
        x["kind"], x["billed"], x["effective"] = "unused", 0.0, ri_unused[m]
        x["desc"] = "unused reservation (reservation_unused_amortized_upfront_fee_for_billing_period + " \
                    "reservation_unused_recurring_fee)"
        extra.append(x)
    sp_unused = (sp_total - sp_used)
    m = (lit == "savingsplanrecurringfee") & (sp_unused > 1e-12)
    if m.any():
        x = frame[m].copy()
        x["kind"], x["billed"], x["effective"] = "unused", 0.0, sp_unused[m]
        x["desc"] = "unused Savings Plan commitment (savings_plan_total_commitment_to_date - " \
                    "savings_plan_used_commitment)"
        extra.append(x)
    pr = Problems(df.index)
    for mask, why in ((s_bad, "line_item_usage_start_date does not parse"),
                      (e_bad, "line_item_usage_end_date does not parse"),
                      (s_far, window_why("line_item_usage_start_date")),
                      (e_far, window_why("line_item_usage_end_date")),
                      (u_bad, "line_item_unblended_cost is not a number"),
                      (a_bad, "line_item_usage_amount is not a number"),
                      (r_bad & d, "reservation_effective_cost is not a number"),
                      (p_bad & s, "savings_plan_savings_plan_effective_cost is not a number")):
        pr.add(mask, why)
    if unknown.any():
        pr.add(unknown, "line_item_line_item_type " + as_object(text_col(df, C("line_item_line_item_type")))
               + " is unknown")
    problems = pr.why
    frame["problem"] = problems
    frame.loc[unknown, "kind"] = "bad_cc"
    if extra:
        for x in extra:
            x["problem"] = problems[x.index]
            x["extra"] = True
        frame["extra"] = False
        frame = pd.concat([frame] + extra)
    return frame, []


_AZ_CHARGE = {"usage": "Usage", "purchase": "Purchase", "refund": "Refund", "unusedreservation": "UnusedReservation",
              "unusedsavingsplan": "UnusedSavingsPlan", "roundingadjustment": "RoundingAdjustment", "tax": "Tax"}
_AZ_PRICING = {"ondemand": "OnDemand", "on demand": "OnDemand", "reservation": "Reservation",
               "savingsplan": "SavingsPlan", "savings plan": "SavingsPlan", "spot": "Spot"}


def _azure_batch(df: "pd.DataFrame", src: Source, ctx: ReadContext) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import pandas as pd

    C = src.col
    charge = ctx.casing.norm(text_col(df, C("ChargeType")), "ChargeType", _AZ_CHARGE)
    pm = ctx.casing.norm(text_col(df, C("PricingModel")), "PricingModel", _AZ_PRICING)
    mcat = as_object(text_col(df, C("MeterCategory"))).str.lower()
    msub = as_object(text_col(df, C("MeterSubCategory")))
    mname = as_object(text_col(df, C("MeterName")))
    svc = as_object(text_col(df, C("ConsumedService"))).str.lower()
    info_type = map_unique(text_col(df, C("AdditionalInfo")), lambda x: json_instance_type(x) if x else "")
    itype = info_type.where(info_type.str.startswith("Standard_"), "")
    itype = itype.where(itype != "", map_unique(mname, azure_size_from_meter))
    prod = as_object(text_col(df, C("ProductName", "Product")))
    p_size = map_unique(prod, lambda x: (AZ_SIZE_RE.search(x).group(0) if x and AZ_SIZE_RE.search(x) else ""))
    compute = (mcat == "virtual machines") | (svc == "microsoft.compute")
    itype = itype.where(compute, "")
    itype = itype.where(itype != "", p_size)
    region = map_unique(text_col(df, C("ResourceLocation", "ResourceLocationNormalized", "Location")), azure_region)
    qty, q_bad = num_col(df, C("Quantity"))
    uom = as_object(text_col(df, C("UnitOfMeasure")))
    block = map_unique(uom, hour_block, dtype=float).astype(float)
    if (block.dropna() > 1).any():
        ctx.counts["hour_blocks"] += int((block > 1).sum())
    cost, c_bad = num_col(df, C("CostInBillingCurrency", "Cost", "PreTaxCost", "CostInUsd"))
    eff_price, _ = num_col(df, C("EffectivePrice"))
    payg, _ = num_col(df, C("PayGPrice"))
    cur = text_col(df, C("BillingCurrency", "BillingCurrencyCode", "Currency"))
    for k, n in cur.value_counts().items():
        if n and k != "":
            ctx.currencies[str(k)] += int(n)
    if C("BillingCurrency", "BillingCurrencyCode", "Currency") is None:
        ctx.counts["no_currency"] += len(df)
    day, d_bad, d_far = time_col(df, C("Date", "UsageDateTime"), date_only=True)
    end = day + pd.Timedelta(days=1)
    cid = as_object(text_col(df, C("ReservationId", "BenefitId")))
    desc = (msub + " " + mname).str.strip()
    desc = desc.where(charge != "purchase", prod)
    hint = compute & (itype == "") & (msub.str.match(AZ_GPU_SERIES_RE) | msub.str.contains(GPU_WORD_RE) |
                                     mname.str.match(AZ_GPU_SERIES_RE))
    kind = pd.Series("skip", index=df.index, dtype=object)
    usage = (charge.isin(["usage", ""])) & compute
    kind[usage] = "usage"
    kind[charge == "purchase"] = "purchase"
    kind[charge == "refund"] = "adjustment"
    kind[charge.isin(["unusedreservation", "unusedsavingsplan"])] = "unused"
    pcat = as_object(pm).map({"ondemand": "Standard", "on demand": "Standard", "reservation": "Committed",
                   "savingsplan": "Committed", "savings plan": "Committed", "spot": "Dynamic"}).fillna("").astype(object)
    spot_meter = mname.str.lower().str.endswith((" spot", " low priority"))
    pcat = pcat.where(~((pcat == "") & spot_meter), "Dynamic")
    pcat = pcat.where(~((pcat == "") & usage & (pm == "")), "Standard")
    committed = usage & (pcat == "Committed")
    billed = cost.copy()
    eff = cost.copy()
    billed[committed] = 0.0
    amort = eff_price * qty
    eff[committed] = cost[committed].where(cost[committed] > 0, amort[committed].where(amort[committed] > 0))
    if (committed & eff.isna()).any():
        ctx.counts["az_actual_committed"] += int((committed & eff.isna()).sum())
    eff[kind == "purchase"] = 0.0
    unused = kind == "unused"
    billed[unused] = 0.0
    hours = qty * block
    lst = (payg * qty).where(kind == "usage")
    frame = canon_frame(df.index, provider="azure", region=region, itype=itype, strong=itype != "", hint=hint,
                        start=day, end=end, hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat, cid=cid,
                        kind=kind, desc=desc)
    sub = as_object(text_col(df, C("SubscriptionId", "SubscriptionGuid")))
    frame["account"] = sub.where(sub != "", as_object(text_col(df, C("BillingAccountId"))))
    frame["covers"] = charge.isin(["usage", ""]).to_numpy()
    add_ids(frame, df, src, "azure-cost-details")
    pr = Problems(df.index)
    for mask, why in ((d_bad, "Date does not parse"), (d_far, window_why("Date")), (q_bad, "Quantity is not a number"),
                      (c_bad, "CostInBillingCurrency is not a number")):
        pr.add(mask, why)
    unknown = (charge != "") & ~charge.isin(list(_AZ_CHARGE))
    if unknown.any():
        pr.add(unknown, "ChargeType " + as_object(text_col(df, C("ChargeType"))) + " is unknown")
    frame.loc[unknown, "kind"] = "bad_cc"
    usage_nohour = usage & block.isna() & (itype != "")
    if usage_nohour.any():
        pr.add(usage_nohour, "UnitOfMeasure " + uom + " is not an hour unit")
    for v, name in ((qty, "Quantity"), (cost, "CostInBillingCurrency"), (eff_price, "EffectivePrice"),
                    (payg, "PayGPrice")):  # a usage row is never negative (a refund is ChargeType Refund)
        pr.add(usage & (v < 0), f"{name} is negative on a usage row")
    frame["problem"] = pr.why
    return frame, []


def _hourly_batch(df: "pd.DataFrame", src: Source, ctx: ReadContext) -> tuple["pd.DataFrame", list[tuple[int, str]]]:
    import pandas as pd

    C = src.col
    hour, h_bad, h_far = time_col(df, C("hour"))
    hours, u_bad = num_col(df, C("usage_hours"))
    billed, b_bad = num_col(df, C("billed_cost"))
    eff, e_bad = num_col(df, C("effective_cost"))
    lst, _ = num_col(df, C("list_cost"))
    pcat_raw = as_object(text_col(df, C("pricing_category")))
    low = ctx.casing.norm(text_col(df, C("pricing_category")), "pricing_category",
                          {"standard": "Standard", "committed": "Committed", "dynamic": "Dynamic"})
    pcat = as_object(low).map({"standard": "Standard", "committed": "Committed", "dynamic": "Dynamic", "": ""})
    itype = as_object(text_col(df, C("instance_type")))
    frame = canon_frame(df.index, provider=map_unique(text_col(df, C("provider")), provider_name),
                        region=as_object(text_col(df, C("region"))),
                        itype=itype, strong=itype != "", hint=False, start=hour, end=hour + pd.Timedelta(hours=1),
                        hours=hours, billed=billed, effective=eff, list=lst, pcat=pcat.fillna("?").astype(object),
                        cid=as_object(text_col(df, C("commitment_id"))), kind="usage", desc="")
    frame["account"] = as_object(text_col(df, C("account_id")))
    frame["covers"] = True
    pr = Problems(df.index)
    for mask, why in ((h_far, window_why("hour")), (h_bad | (hour.isna()), "hour does not parse"),
                      (u_bad | hours.isna(), "usage_hours is not a number"),
                      (b_bad, "billed_cost is not a number"), (e_bad, "effective_cost is not a number"),
                      (hours < 0, "usage_hours is negative"), (billed < 0, "billed_cost is negative"),
                      (eff < 0, "effective_cost is negative"), (lst < 0, "list_cost is negative"),
                      (pcat.isna(), "pricing_category " + pcat_raw + " is not Standard/Committed/Dynamic/empty")):
        pr.add(mask, why)
    frame["problem"] = pr.why
    ctx.counts["no_currency_hourly"] += len(df)
    if C("window_start") is not None and C("window_end") is not None and len(df):
        w0, _, _ = time_col(df, C("window_start"))
        w1, _, _ = time_col(df, C("window_end"))
        pairs = pd.DataFrame({"a": w0, "b": w1}).drop_duplicates()
        ctx.windows.update((None if pd.isna(a) else a, None if pd.isna(b) else b)
                           for a, b in zip(pairs["a"], pairs["b"]))
    return frame, []


NUMERIC_COLUMNS = {
    "focus": frozenset({"billedcost", "effectivecost", "listcost", "contractedcost", "consumedquantity",
                        "pricingquantity", "listunitprice", "contractedunitprice", "commitmentdiscountquantity"}),
    "aws-cur-2.0": frozenset({"line_item_usage_amount", "line_item_unblended_cost", "line_item_unblended_rate",
                              "reservation_effective_cost", "savings_plan_savings_plan_effective_cost",
                              "pricing_public_on_demand_cost", "pricing_public_on_demand_rate",
                              "reservation_unused_recurring_fee",
                              "reservation_unused_amortized_upfront_fee_for_billing_period",
                              "savings_plan_total_commitment_to_date", "savings_plan_used_commitment"}),
    "azure-cost-details": frozenset({"quantity", "costinbillingcurrency", "cost", "pretaxcost", "costinusd",
                                     "effectiveprice", "paygprice", "unitprice"}),
    "hourly": frozenset({"usage_hours", "billed_cost", "effective_cost", "list_cost"}),
}

BATCHERS = {"aws-cur-2.0": _cur_batch, "azure-cost-details": _azure_batch, "hourly": _hourly_batch}

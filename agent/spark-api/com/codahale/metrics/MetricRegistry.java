package com.codahale.metrics;

/** Compile-only placeholder for Dropwizard's MetricRegistry. */
public class MetricRegistry {}

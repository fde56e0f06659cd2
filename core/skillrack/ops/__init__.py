"""What operators run against an agent: doctor, the conformance check, spec, the plugin scaffold."""

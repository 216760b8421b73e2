"""The compared methods other than ExPriL's own chain, one plug-in module each (expril.plugins.base,
docs/extending.md). The registry finds them at run time (expril.plugins.registry), so that no
module imports them all: each method's code digest covers its own module only."""

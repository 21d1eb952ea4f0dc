// libyaml's parser (Debian's libyaml-dev): motiond.conf is read with it.
#include <yaml.h>

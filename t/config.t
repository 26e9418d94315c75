#!/usr/bin/perl

# Configuration errors: each bad configuration fails "nginx -t" with the
# exact message, naming the directive, the bad value and FILE:LINE (the
# line marked "# HERE" in the template); good configurations pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;

# one server line, then the case's http-level lines
sub http_conf {
    my ($lines) = @_;
    return "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n$lines}\n";
}

my $srv = <<'EOF2';
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            %%LINE%%
        }
    }
EOF2

sub in_location {
    my ($line) = @_;
    (my $c = $srv) =~ s/%%LINE%%/$line/;
    return http_conf($c);
}

# [name, template, expected message with FILE and LINE (and FIRST) to fill]
my @bad = (
    ['rate with a bad unit', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/x; # HERE\n"),
        'invalid rate "rate=5r/x" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate of zero', http_conf("    redis_ratelimit_zone \$a zone=z rate=0r/s; # HERE\n"),
        'invalid rate "rate=0r/s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate without r', http_conf("    redis_ratelimit_zone \$a zone=z rate=5/s; # HERE\n"),
        'invalid rate "rate=5/s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate per ms', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/ms; # HERE\n"),
        'invalid rate "rate=5r/ms" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate over a zero period', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/0s; # HERE\n"),
        'invalid rate "rate=5r/0s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['unknown algorithm', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=leaky_bucket; # HERE\n"),
        'invalid algorithm "algorithm=leaky_bucket" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['duplicate zone', http_conf("    redis_ratelimit_zone \$a zone=x rate=5r/s; # FIRST\n"
            . "    redis_ratelimit_zone \$b zone=x rate=1r/m; # HERE\n"),
        'zone "x" is duplicate in "redis_ratelimit_zone" directive, first defined in FILE:FIRST in FILE:LINE'],
    ['zone without rate', http_conf("    redis_ratelimit_zone \$a zone=z; # HERE\n"),
        '"redis_ratelimit_zone" must have "rate" parameter in FILE:LINE'],
    ['zone without name', http_conf("    redis_ratelimit_zone \$a rate=1r/s; # HERE\n"),
        '"redis_ratelimit_zone" must have "zone" parameter in FILE:LINE'],
    ['zone name with a brace', http_conf("    redis_ratelimit_zone \$a \"zone=a{b\" rate=1r/s; # HERE\n"),
        'invalid zone name "a{b" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['zone name with a colon', http_conf("    redis_ratelimit_zone \$a zone=a:b rate=1r/s; # HERE\n"),
        'invalid zone name "a:b" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate with units out of order', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/30m1h; # HERE\n"),
        'invalid rate "rate=5r/30m1h" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['negative burst', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s burst=-1; # HERE\n"),
        'invalid burst value "burst=-1" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['unknown zone parameter', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s foo=1; # HERE\n"),
        'invalid parameter "foo=1" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['zone in a server', http_conf("    server {\n        redis_ratelimit_zone \$a zone=z rate=1r/s; # HERE\n    }\n"),
        '"redis_ratelimit_zone" directive is not allowed here in FILE:LINE'],

    ['unknown server parameter',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 foo=1; # HERE\n}\n",
        'invalid parameter "foo=1" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['zero timeout',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 timeout=0; # HERE\n}\n",
        'invalid timeout "timeout=0" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad connect_timeout',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 connect_timeout=soon; # HERE\n}\n",
        'invalid timeout "connect_timeout=soon" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad db',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 db=x; # HERE\n}\n",
        'invalid db "db=x" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad port',
        "http {\n    redis_ratelimit_server 127.0.0.1:99999; # HERE\n}\n",
        'invalid port in "127.0.0.1:99999" of the "redis_ratelimit_server" directive in FILE:LINE'],
    ['duplicate server',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n    redis_ratelimit_server 127.0.0.1:6380; # HERE\n}\n",
        '"redis_ratelimit_server" directive is duplicate in FILE:LINE'],

    ['unknown zone in a location', in_location('redis_ratelimit zone=nope; # HERE'),
        'unknown zone "nope" in "redis_ratelimit" directive in FILE:LINE'],
    ['unknown zone at the http level',
        http_conf("    redis_ratelimit zone=nope; # HERE\n    server { listen 127.0.0.1:%%PORT%%; }\n"),
        'unknown zone "nope" in "redis_ratelimit" directive in FILE:LINE'],
    ['unknown redis_ratelimit parameter', in_location('redis_ratelimit zone=z foo=1; # HERE'),
        'invalid parameter "foo=1" in "redis_ratelimit" directive in FILE:LINE'],
    ['redis_ratelimit without zone', in_location('redis_ratelimit cost=1; # HERE'),
        '"redis_ratelimit" must have "zone" parameter in FILE:LINE'],
    ['same zone twice', in_location("redis_ratelimit zone=z;\n            redis_ratelimit zone=z; # HERE"),
        'zone "z" is duplicate in "redis_ratelimit" directive in FILE:LINE'],
    ['cost of zero', in_location('redis_ratelimit zone=z cost=0; # HERE'),
        'invalid cost "cost=0" in "redis_ratelimit" directive, it must be a number from 1 to 1000000000 or a variable in FILE:LINE'],
    ['cost over the capacity', in_location('redis_ratelimit zone=z cost=6; # HERE'),
        'cost=6 is more than zone "z" can ever allow (5) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity with burst',
        http_conf("    redis_ratelimit_zone \$a zone=b rate=5r/m burst=2;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=b cost=8; # HERE\n    }\n"),
        'cost=8 is more than zone "b" can ever allow (7) in "redis_ratelimit" directive in FILE:LINE'],

    ['status 399', in_location('redis_ratelimit_status 399; # HERE'),
        'invalid value "399" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status 600', in_location('redis_ratelimit_status 600; # HERE'),
        'invalid value "600" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status not a number', in_location('redis_ratelimit_status slow; # HERE'),
        'invalid value "slow" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status twice', in_location("redis_ratelimit_status 429;\n            redis_ratelimit_status 503; # HERE"),
        '"redis_ratelimit_status" directive is duplicate in FILE:LINE'],
    ['bad fail value', in_location('redis_ratelimit_fail x; # HERE'),
        'invalid value "x" in "redis_ratelimit_fail" directive, it must be "open" or "closed" in FILE:LINE'],
    ['bad headers value', in_location('redis_ratelimit_headers draft; # HERE'),
        'invalid value "draft" in "redis_ratelimit_headers" directive, it must be "off" or "legacy" in FILE:LINE'],
    ['bad log level', in_location('redis_ratelimit_log_level debug; # HERE'),
        'invalid value "debug" in "redis_ratelimit_log_level" directive, it must be "info", "notice", "warn" or "error" in FILE:LINE'],
    ['bad dry_run value', in_location('redis_ratelimit_dry_run maybe; # HERE'),
        'invalid value "maybe" in "redis_ratelimit_dry_run" directive, it must be "on" or "off" in FILE:LINE'],
    ['server in a location', in_location('redis_ratelimit_server 127.0.0.1:6379; # HERE'),
        '"redis_ratelimit_server" directive is not allowed here in FILE:LINE'],
);

for my $case (@bad) {
    my ($name, $template, $want) = @$case;
    my ($out, $rc, $file, $text) = $t->nginx_t($template);

    my $line = RRL::Test::line_of($text, qr/# HERE/);
    $want =~ s/FILE/$file/g;
    $want =~ s/LINE/$line/g;
    if ($want =~ /FIRST/) {
        my $first = RRL::Test::line_of($text, qr/# FIRST/);
        $want =~ s/FIRST/$first/g;
    }

    isnt($rc, 0, "$name: nginx -t fails");
    like($out, qr/^nginx: \[emerg\] \Q$want\E$/m, "$name: message")
        or diag("expected: nginx: [emerg] $want");
    like($out, qr/test failed/, "$name: test failed");
}

# zones without a server: a message of its own

{
    my ($out, $rc, $file, $text) =
        $t->nginx_t("http {\n    redis_ratelimit_zone \$a zone=z rate=5r/m;\n}\n");
    my $line = RRL::Test::line_of($text, qr/zone=z/);
    isnt($rc, 0, 'zone without a server: nginx -t fails');
    like($out, qr/^nginx: \[emerg\] "redis_ratelimit_zone" is used in \Q$file\E:$line, but no "redis_ratelimit_server" is defined$/m,
        'zone without a server: message');
}

# good configurations

my @good = (
    ['every directive and option', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379 timeout=50ms connect_timeout=1s password=secret db=2;
    redis_ratelimit_zone $binary_remote_addr zone=ip rate=10r/s;
    redis_ratelimit_zone $arg_user zone=user rate=100r/m algorithm=sliding_log burst=20;
    redis_ratelimit_zone "$host:$uri" zone=page rate=5r/1m30s algorithm=fixed_window;
    redis_ratelimit_zone $arg_k zone=hourly rate=1000r/h burst=0;
    redis_ratelimit_zone $arg_k zone=daily rate=1r/d;
    redis_ratelimit_zone $arg_k zone=tens rate=3r/10s;

    redis_ratelimit zone=ip;
    redis_ratelimit_status 503;
    redis_ratelimit_dry_run off;
    redis_ratelimit_headers legacy;
    redis_ratelimit_fail open;
    redis_ratelimit_log_level warn;

    server {
        listen 127.0.0.1:%%PORT%%;
        redis_ratelimit zone=user cost=$arg_cost;
        redis_ratelimit zone=page cost=5;
        redis_ratelimit_status 444;

        location / {
            redis_ratelimit zone=hourly cost=1000;
            redis_ratelimit zone=daily;
            redis_ratelimit zone=tens;
            redis_ratelimit_status 429;
            redis_ratelimit_dry_run on;
            redis_ratelimit_headers off;
            redis_ratelimit_fail closed;
            redis_ratelimit_log_level info;
        }
        location /notice/ {
            redis_ratelimit_log_level notice;
        }
        location /error/ {
            redis_ratelimit_log_level error;
            redis_ratelimit_status 599;
        }
    }
}
EOF2
    ['a zone defined after its use', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            redis_ratelimit zone=later cost=7;
        }
    }
    redis_ratelimit_zone $arg_k zone=later rate=5r/m burst=2;
}
EOF2
    ['a unix socket server', <<'EOF2'],
http {
    redis_ratelimit_server unix:/tmp/redis.sock;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['the module loaded, not used', <<'EOF2'],
http {
    server {
        listen 127.0.0.1:%%PORT%%;
    }
}
EOF2
);

for my $case (@good) {
    my ($name, $template) = @$case;
    my ($out, $rc) = $t->nginx_t($template);
    is($rc, 0, "$name: nginx -t passes") or diag($out);
    like($out, qr/syntax is ok/, "$name: syntax is ok");
    like($out, qr/test is successful/, "$name: test is successful");
    unlike($out, qr/\[(warn|emerg|alert|crit)\]/, "$name: no warning");
}

$t->done_testing;

package RRL::Test;

# End-to-end test helper for ngx_http_redis_ratelimit_module, in the style
# of nginx-tests: each test file gets its own world-readable temporary
# directory, its own redis-server on a free port, and one or more real
# nginx instances (master + 1 worker, daemonized) built from config
# templates.
#
#   use lib 't/lib';
#   use RRL::Test;
#   my $t = RRL::Test->new;             # skip_all if the module or redis is missing
#   $t->start_redis;
#   my $n = $t->start_nginx(<<'EOF');   # placeholders: see RRL::Test::Conf
#   http { server { listen 127.0.0.1:%%PORT%%; ... } }
#   EOF
#   my $r = $n->get('/?key=a');         # { status, h => {lc name => value}, ... }
#   $t->done_testing;                   # stops everything, checks error logs
#
# This module is the test file's world: its directory, its nginx instances,
# its cleanups and its end. The rest, one concern a module, in RRL/Test/:
#   Env     the programs under test, from the environment; run_command
#   Ports   free_port
#   Redis   the file's redis-server ($t->start_redis, $t->redis, ...)
#   Conf    nginx configs: templates expanded, nginx -t, line_of
#   Nginx   an nginx instance: started, its logs, reload, stop, requests
#   Metrics an instance's /metrics
#   Http    the HTTP client
#   Logs    the error.log checks every file ends with
# Their functions are RRL::Test's too (RRL::Test::http_send, ...).
# RRL_TEST_KEEP=1 keeps the temporary directory; RRL::Test::Env names the
# other variables.

use strict;
use warnings;

use Carp qw(croak);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use Scalar::Util ();
use Test::More ();

use RRL::Test::Env qw(module_path nginx_binary nginx_preload
    redis_server_binary redis_cli_binary hiredis_major which run_command
    read_file);
use RRL::Test::Ports qw(free_port claim_port);
use RRL::Test::Http qw(http http_request_text http_send http_read
    parse_response http_parallel http_burst http_abort);
use RRL::Test::Conf qw(line_of);
use RRL::Test::Redis;
use RRL::Test::Logs;
use RRL::Test::Nginx;

our @ISA = qw(RRL::Test::Redis RRL::Test::Conf RRL::Test::Logs);

our $VERSION = '1.0';

my @instances;    # every RRL::Test alive, for END

sub new {
    my ($class, %opts) = @_;

    my $module = module_path();
    Test::More::plan(skip_all => "module not built: $module "
        . "(cmake --build build --target module, or set RRL_MODULE)")
        unless -f $module;
    Test::More::plan(skip_all => "nginx not found: " . nginx_binary()
        . " (set RRL_NGINX)")
        unless -x nginx_binary();
    for my $p (redis_server_binary(), redis_cli_binary()) {
        Test::More::plan(skip_all => "$p not found in PATH") unless which($p);
    }

    my $dir = tempdir('rrl-test-XXXXXX', TMPDIR => 1,
        CLEANUP => $ENV{RRL_TEST_KEEP} ? 0 : 1);
    chmod 0755, $dir;    # nginx workers run as nobody

    my $self = bless {
        dir => $dir,
        module => $module,
        nginx => [],
        redis_port => undef,
        redis_pid => undef,
        redis_args => [],
        redis_password => undef,
        owner => $$,
        nt => 0,
    }, $class;

    Test::More::diag("test dir: $dir") if $ENV{RRL_TEST_KEEP};

    $self->write_file('html/index.html', "OK\n");

    push @instances, $self;
    return $self;
}

sub testdir { $_[0]{dir} }

sub write_file {
    my ($self, $name, $content) = @_;
    my $path = "$self->{dir}/$name";
    my $d = dirname($path);
    unless (-d $d) {
        make_path($d);
        # every new level world-readable
        my $p = $d;
        while (length($p) > length($self->{dir})) {
            chmod 0755, $p;
            $p = dirname($p);
        }
    }
    open my $fh, '>', $path or croak "cannot write $path: $!";
    binmode $fh;
    print $fh $content;
    close $fh;
    chmod 0644, $path;
    return $path;
}

# start_nginx($template, wait_connected => 1): starts an instance in its
# own directory (RRL::Test::Nginx's start says what it waits for)

sub start_nginx {
    my ($self, $template, %opts) = @_;

    my $n = @{ $self->{nginx} };
    my $ndir = "$self->{dir}/nginx$n";
    my %ports;
    my (undef, $conf) = $self->write_conf($ndir, $template, \%ports, %opts);

    my $inst = RRL::Test::Nginx->new(
        t => $self,
        dir => $ndir,
        ports => \%ports,
        conf => $conf,
        index => $n,
    );
    push @{ $self->{nginx} }, $inst;

    return $inst->start(%opts);
}

sub nginx { $_[0]{nginx}[$_[1] // 0] }

sub stop_all {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    $_->stop for grep { defined } @{ $self->{nginx} || [] };
    $self->run_cleanups;
    $self->stop_redis;
}

# add_cleanup($code): runs once, after every nginx has stopped, when the
# file ends (done_testing) or dies (END): e.g. stops a Redis Cluster or
# sentinels started by RRL::Cluster or RRL::Sentinel

sub add_cleanup {
    my ($self, $code) = @_;
    push @{ $self->{cleanups} }, $code;
    return $self;
}

# register_servers($obj, \@registry): the common part of RRL::Cluster's
# and RRL::Sentinel's new(), for servers of their own under this test's
# directory: creates $obj->{dir} (world-readable), keeps $obj->{t} weak,
# puts $obj in the caller's @registry (weakly, for its END) and has
# $obj->stop run with this test's cleanups. Returns $obj.

sub register_servers {
    my ($self, $obj, $registry) = @_;

    $obj->{t} = $self;
    Scalar::Util::weaken($obj->{t});

    mkdir $obj->{dir};
    chmod 0755, $obj->{dir};

    push @$registry, $obj;
    Scalar::Util::weaken($registry->[-1]);
    my $weak = $obj;
    Scalar::Util::weaken($weak);
    $self->add_cleanup(sub { $weak->stop if $weak });

    return $obj;
}

sub run_cleanups {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    while (my $code = pop @{ $self->{cleanups} || [] }) {
        eval { $code->(); 1 } or Test::More::diag("cleanup failed: $@");
    }
}

# done_testing: stops every nginx, then checks that no error log has
# [alert], [crit] or [emerg] lines, exit-time ones included (and the rest
# of RRL::Test::Logs' checks)

sub done_testing {
    my ($self) = @_;

    $_->stop for @{ $self->{nginx} };

    $self->check_alerts;
    $self->check_error_logs unless $self->{checked_error_logs};
    $self->check_sanitizer_reports;

    $self->run_cleanups;
    $self->stop_redis;
    Test::More::done_testing();
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $@, $!);
    $self->stop_all;
}

END {
    local $?;
    $_->stop_all for grep { defined } @instances;
}

1;

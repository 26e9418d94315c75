package RRL::Test::Env;

# The programs an end-to-end test runs, as the environment names them, and
# running one: RRL_MODULE (the .so), RRL_NGINX (the nginx binary),
# RRL_NGINX_PRELOAD (LD_PRELOAD for nginx only, e.g. the ASan runtime),
# RRL_REDIS_SERVER (the server every helper starts: redis-server, or
# valkey-server; its cli is the same name with -cli for -server, or
# RRL_REDIS_CLI). RRL::Test exports these functions under its own name too
# (RRL::Test::run_command, ...).

use strict;
use warnings;

use Carp qw(croak);
use Cwd qw(abs_path);
use Exporter qw(import);
use File::Basename qw(dirname);
use File::Spec;
use POSIX ();

our @EXPORT_OK = qw(module_path nginx_binary nginx_preload
    redis_server_binary redis_cli_binary hiredis_major which run_command
    read_file);

my $REPO = abs_path(File::Spec->catdir(dirname(abs_path(__FILE__)),
    (File::Spec->updir) x 4));

sub module_path {
    my $m = $ENV{RRL_MODULE}
        // "$REPO/build/ngx_http_redis_ratelimit_module.so";
    return -e $m ? abs_path($m) : $m;
}

sub nginx_binary { $ENV{RRL_NGINX} // '/usr/sbin/nginx' }

# RRL_NGINX_PRELOAD: a library preloaded into nginx only (the ASan runtime,
# when the module is built with sanitizers and nginx is not)
sub nginx_preload { $ENV{RRL_NGINX_PRELOAD} // $ENV{LD_PRELOAD} // '' }

# the server binary and its cli, for RRL::Test, RRL::Cluster and RRL::Sentinel
sub redis_server_binary { $ENV{RRL_REDIS_SERVER} // 'redis-server' }

sub redis_cli_binary {
    return $ENV{RRL_REDIS_CLI} if defined $ENV{RRL_REDIS_CLI};
    (my $cli = redis_server_binary()) =~ s/-server\z/-cli/;
    return $cli;
}

# hiredis' generation in the module (0 or 1): 1.x's reader linked in (its
# "Bad simple string value"), or its shared library
sub hiredis_major {
    my $m = module_path();
    return 1 if index(read_file($m), 'Bad simple string value') >= 0;
    my $ldd = run_command('ldd', $m);
    return $ldd =~ /libhiredis\.so\.(\d+)/ ? $1 + 0 : 0;
}

sub which {
    my ($prog) = @_;
    return -x $prog ? $prog : undef if $prog =~ m{/};
    for my $d (split /:/, $ENV{PATH} // '') {
        return "$d/$prog" if -x "$d/$prog";
    }
    return undef;
}

# run_command(@argv): runs a program (no shell), its stderr merged into
# its stdout; the output, trailing newline removed, in scalar context; its
# lines in list context. $? is the program's exit status afterwards.
# Every redis-cli of RRL::Test, RRL::Cluster and RRL::Sentinel runs here.

sub run_command {
    my (@cmd) = @_;
    my $pid = open(my $fh, '-|') // croak "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @cmd; }
        POSIX::_exit(127);
    }
    binmode $fh;
    local $/;
    my $out = <$fh> // '';
    close $fh;
    $out =~ s/\n\z//;
    return wantarray ? split(/\n/, $out) : $out;
}

# a file's content, '' when it cannot be read
sub read_file {
    my ($path) = @_;
    open my $fh, '<', $path or return '';
    binmode $fh;
    local $/;
    my $c = <$fh>;
    close $fh;
    return $c // '';
}

1;
